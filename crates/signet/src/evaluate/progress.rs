//! Progress of an evaluation: a bar on a terminal, a log line every tenth of the way elsewhere.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How an evaluation shows its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Progress {
    /// A bar when standard error is a terminal, otherwise [`Lines`](Progress::Lines) (the default).
    #[default]
    Auto,
    /// A bar on standard error, with the running average as DSPy shows it
    /// (`Average Metric: 9.00 / 12 (75.0%)`).
    Bar,
    /// A line on standard error each time another tenth of the examples has finished (for logs
    /// and CI, where a bar would not render).
    Lines,
    /// Nothing.
    Off,
}

/// The running tally and how it is shown.
pub(super) struct Bar {
    shown: Shown,
    tally: Mutex<Tally>,
    total: usize,
}

enum Shown {
    Bar(ProgressBar),
    Lines(Mutex<Box<dyn Write + Send>>),
    Off,
}

#[derive(Default)]
struct Tally {
    done: usize,
    sum: f64,
    errors: usize,
    logged_tenths: usize,
}

impl Bar {
    pub(super) fn new(progress: Progress, total: usize) -> Bar {
        let terminal = std::io::stderr().is_terminal();
        let shown = match progress {
            Progress::Off => Shown::Off,
            Progress::Lines => return Bar::lines(total, Box::new(std::io::stderr())),
            Progress::Auto if !terminal => return Bar::lines(total, Box::new(std::io::stderr())),
            Progress::Auto | Progress::Bar => {
                let bar =
                    ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
                if let Ok(style) = ProgressStyle::with_template(
                    "{msg} {wide_bar} {pos}/{len} [{elapsed_precise}<{eta_precise}]",
                ) {
                    bar.set_style(style);
                }
                Shown::Bar(bar)
            }
        };
        Bar {
            shown,
            tally: Mutex::new(Tally::default()),
            total,
        }
    }

    /// Progress as lines written to `sink`.
    fn lines(total: usize, sink: Box<dyn Write + Send>) -> Bar {
        Bar {
            shown: Shown::Lines(Mutex::new(sink)),
            tally: Mutex::new(Tally::default()),
            total,
        }
    }

    /// Counts one finished example.
    pub(super) fn record(&self, score: f64, failed: bool) {
        let mut tally = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        tally.done += 1;
        tally.sum += score;
        tally.errors += usize::from(failed);
        let message = format!(
            "Average Metric: {:.2} / {} ({:.1}%){}",
            tally.sum,
            tally.done,
            100.0 * tally.sum / tally.done as f64,
            if tally.errors > 0 {
                format!(", {} failed", tally.errors)
            } else {
                String::new()
            }
        );
        match &self.shown {
            Shown::Bar(bar) => {
                bar.set_message(message);
                bar.inc(1);
            }
            Shown::Lines(sink) => {
                let tenths = tally.done * 10 / self.total.max(1);
                if tenths > tally.logged_tenths || tally.done == self.total {
                    tally.logged_tenths = tenths;
                    let mut sink = sink.lock().unwrap_or_else(|e| e.into_inner());
                    // Progress is best effort: a closed stderr does not stop the evaluation.
                    let _ = writeln!(
                        sink,
                        "evaluate: {}/{} done, {message}",
                        tally.done, self.total
                    );
                }
            }
            Shown::Off => {}
        }
    }

    /// Leaves the final state on screen.
    pub(super) fn finish(&self) {
        if let Shown::Bar(bar) = &self.shown {
            bar.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A sink the test can read.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_come_every_tenth_and_at_the_end() {
        let sink = Shared::default();
        let bar = Bar::lines(25, Box::new(sink.clone()));
        for i in 0..25 {
            bar.record(if i % 2 == 0 { 1.0 } else { 0.0 }, i == 3);
        }
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 10, "{text}");
        assert_eq!(
            lines[0],
            "evaluate: 3/25 done, Average Metric: 2.00 / 3 (66.7%)"
        );
        assert_eq!(
            lines[9],
            "evaluate: 25/25 done, Average Metric: 13.00 / 25 (52.0%), 1 failed"
        );
    }
}
