//! A fixed number of worker loops on the caller's task, each taking the next job when its last
//! one ends: what an evaluation runs its examples on.
//!
//! A queue of futures (`buffer_unordered`) makes, moves and frees one future per job; a worker
//! runs its jobs one after another in the same place, so a job costs only itself.

use std::future::Future;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use futures::StreamExt;
use futures::stream::FuturesUnordered;

/// Runs `run` on the items `next` gives, at most `workers` at once, all on the caller's task.
/// Each result goes to `finished` as soon as its job ends. A worker stops when `next` gives
/// `None` (its job in hand still ends and is reported). When `finished` breaks, every job still
/// running is dropped, no result is reported after it, and this returns `Break`.
pub(crate) async fn run_pooled<I, R, F>(
    workers: usize,
    next: impl Fn() -> Option<I>,
    run: impl Fn(I) -> F,
    finished: impl Fn(R) -> ControlFlow<()>,
) -> ControlFlow<()>
where
    F: Future<Output = R>,
{
    let stopped = AtomicBool::new(false);
    let worker = || async {
        while !stopped.load(Ordering::Relaxed) {
            let Some(item) = next() else { break };
            let result = run(item).await;
            if stopped.load(Ordering::Relaxed) {
                break;
            }
            if finished(result).is_break() {
                stopped.store(true, Ordering::Relaxed);
            }
        }
    };
    let mut running: FuturesUnordered<_> = (0..workers.max(1)).map(|_| worker()).collect();
    std::future::poll_fn(|cx| {
        loop {
            let ended = running.poll_next_unpin(cx);
            if stopped.load(Ordering::Relaxed) {
                return Poll::Ready(ControlFlow::Break(()));
            }
            match ended {
                Poll::Ready(Some(())) => continue,
                Poll::Ready(None) => return Poll::Ready(ControlFlow::Continue(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;

    /// Items 0..n, each taking `ms(i)` milliseconds; what ended, in order, and the result.
    async fn pooled(
        workers: usize,
        n: usize,
        ms: impl Fn(usize) -> u64,
        stop_at: Option<usize>,
    ) -> (Vec<usize>, ControlFlow<()>, usize) {
        let next_item = Mutex::new(0..n);
        let started = Mutex::new(0);
        let ended = Mutex::new(Vec::new());
        let flow = run_pooled(
            workers,
            || {
                let item = next_item.lock().unwrap().next();
                *started.lock().unwrap() += usize::from(item.is_some());
                item
            },
            |i| {
                let ms = ms(i);
                async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    i
                }
            },
            |i| {
                ended.lock().unwrap().push(i);
                if Some(i) == stop_at {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )
        .await;
        let started = *started.lock().unwrap();
        (ended.into_inner().unwrap(), flow, started)
    }

    #[tokio::test(start_paused = true)]
    async fn every_item_runs_at_most_workers_at_once() {
        let clock = tokio::time::Instant::now();
        let (ended, flow, started) = pooled(3, 7, |_| 10, None).await;
        assert_eq!(flow, ControlFlow::Continue(()));
        assert_eq!(started, 7);
        let mut sorted = ended.clone();
        sorted.sort();
        assert_eq!(sorted, (0..7).collect::<Vec<_>>());
        // 7 jobs of 10 ms, 3 at a time: three rounds.
        assert_eq!(clock.elapsed(), Duration::from_millis(30));
    }

    #[tokio::test(start_paused = true)]
    async fn a_worker_takes_the_next_item_when_its_job_ends() {
        // Item 0 is slow; the other worker runs 1, 2 and 3 meanwhile.
        let (ended, _, _) = pooled(2, 4, |i| if i == 0 { 100 } else { 10 }, None).await;
        assert_eq!(ended, [1, 2, 3, 0]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_break_drops_the_jobs_still_running_and_reports_nothing_after_it() {
        // 0 ends at 10 ms and breaks; 1 (50 ms) is dropped; 2 never starts.
        let (ended, flow, started) = pooled(2, 3, |i| if i == 0 { 10 } else { 50 }, Some(0)).await;
        assert_eq!(flow, ControlFlow::Break(()));
        assert_eq!(ended, [0]);
        assert_eq!(started, 2);
    }

    #[tokio::test]
    async fn no_items_end_at_once_and_zero_workers_means_one() {
        let (ended, flow, _) = pooled(4, 0, |_| 0, None).await;
        assert!(ended.is_empty());
        assert_eq!(flow, ControlFlow::Continue(()));
        let (ended, _, _) = pooled(0, 2, |_| 0, None).await;
        assert_eq!(ended, [0, 1]);
    }
}
