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

/// Progress shown as work finishes: a bar, or a line every tenth of the way.
pub(crate) struct Bar {
    shown: Shown,
    label: &'static str,
    count: Mutex<Count>,
    total: usize,
}

enum Shown {
    Bar(ProgressBar),
    Lines(Mutex<Box<dyn Write + Send>>),
    Off,
}

#[derive(Default)]
struct Count {
    done: usize,
    logged_tenths: usize,
}

impl Bar {
    /// Progress over `total` items, lines prefixed with `label`.
    pub(crate) fn new(progress: Progress, label: &'static str, total: usize) -> Bar {
        let terminal = std::io::stderr().is_terminal();
        let shown = match progress {
            Progress::Off => Shown::Off,
            Progress::Lines => return Bar::lines(label, total, Box::new(std::io::stderr())),
            Progress::Auto if !terminal => {
                return Bar::lines(label, total, Box::new(std::io::stderr()));
            }
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
            label,
            count: Mutex::new(Count::default()),
            total,
        }
    }

    /// Progress as lines written to `sink`.
    fn lines(label: &'static str, total: usize, sink: Box<dyn Write + Send>) -> Bar {
        Bar {
            shown: Shown::Lines(Mutex::new(sink)),
            label,
            count: Mutex::new(Count::default()),
            total,
        }
    }

    /// One more item done; `message` says where things stand.
    pub(crate) fn advance(&self, message: impl FnOnce() -> String) {
        let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        count.done += 1;
        match &self.shown {
            Shown::Bar(bar) => {
                bar.set_message(message());
                bar.inc(1);
            }
            Shown::Lines(sink) => {
                let tenths = count.done * 10 / self.total.max(1);
                if tenths > count.logged_tenths || count.done == self.total {
                    count.logged_tenths = tenths;
                    let mut sink = sink.lock().unwrap_or_else(|e| e.into_inner());
                    // Progress is best effort: a closed stderr does not stop the work.
                    let _ = writeln!(
                        sink,
                        "{}: {}/{} done, {}",
                        self.label,
                        count.done,
                        self.total,
                        message()
                    );
                }
            }
            Shown::Off => {}
        }
    }

    /// Leaves the final state on screen.
    pub(crate) fn finish(&self) {
        if let Shown::Bar(bar) = &self.shown {
            bar.finish();
        }
    }
}

/// DSPy's running average line: `Average Metric: 9.00 / 12 (75.0%)`, with the failures.
pub(super) fn average_line(sum: f64, done: usize, failed: usize) -> String {
    format!(
        "Average Metric: {sum:.2} / {done} ({:.1}%){}",
        100.0 * sum / done.max(1) as f64,
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        }
    )
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
        let bar = Bar::lines("evaluate", 25, Box::new(sink.clone()));
        let (mut sum, mut failed) = (0.0, 0);
        for i in 0..25 {
            sum += if i % 2 == 0 { 1.0 } else { 0.0 };
            failed += usize::from(i == 3);
            bar.advance(|| average_line(sum, i + 1, failed));
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
