//! The command line and timing loop the optimizer overhead benches share.

use std::time::{Duration, Instant};

/// The bench's command line: `--seconds S` (3 by default) and whether `cargo bench` ran it
/// (`--bench`; `cargo test --benches` runs it without, and then nothing is timed).
pub fn args() -> (Duration, bool) {
    let mut seconds = 3.0_f64;
    let mut timed = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--seconds takes a number")
            }
            "--bench" => timed = true,
            other => panic!("unknown argument {other:?}"),
        }
    }
    (Duration::from_secs_f64(seconds), timed)
}

/// Calls `run` one after another for `budget` (at least 5 times); returns the number of runs
/// and the median time.
pub fn median(budget: Duration, mut run: impl FnMut()) -> (usize, Duration) {
    let mut times = Vec::new();
    let started = Instant::now();
    while started.elapsed() < budget || times.len() < 5 {
        let start = Instant::now();
        run();
        times.push(start.elapsed());
    }
    times.sort();
    (times.len(), times[times.len() / 2])
}
