//! Many requests at once, bounded, stopping at the first failure: the survey's lists and the
//! applies of one cluster, the deletes of a removal, the deletes of a record's Secrets.
//!
//! Guarantees: at most `limit` steps run at a time; once one has failed no further step is
//! started (against a server that stopped, each would cost a timeout), but every step already
//! running finishes, so what reached the server is reported; the results come in the items'
//! order, `None` for a step not started.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream::{self, StreamExt};

/// Runs `step` on every item, at most `limit` at a time, until one fails: see the module
/// documentation.
pub async fn until_failure<I, T, E, F, Fut>(
    items: I,
    limit: usize,
    step: F,
) -> Vec<Option<Result<T, E>>>
where
    I: IntoIterator,
    F: Fn(I::Item) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let failed = AtomicBool::new(false);
    let (failed, step) = (&failed, &step);
    stream::iter(items)
        .map(|item| async move {
            if failed.load(Ordering::Relaxed) {
                return None;
            }
            let result = step(item).await;
            if result.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            Some(result)
        })
        .buffered(limit.max(1))
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn no_step_starts_after_a_failure_and_the_running_ones_finish_in_order() {
        let started = AtomicUsize::new(0);
        let results = until_failure(0..10u64, 2, |i| {
            started.fetch_add(1, Ordering::Relaxed);
            async move {
                // Item 1 fails while item 0 is still running: 0 finishes, 2.. never start.
                tokio::time::sleep(Duration::from_millis(if i == 0 { 50 } else { 1 })).await;
                if i == 1 {
                    Err("refused")
                } else {
                    Ok(i)
                }
            }
        })
        .await;
        assert_eq!(results.len(), 10);
        assert_eq!(results[0], Some(Ok(0)));
        assert_eq!(results[1], Some(Err("refused")));
        assert!(results[2..].iter().all(Option::is_none), "{results:?}");
        assert_eq!(started.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn without_a_failure_every_step_runs_at_most_limit_at_a_time() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let results = until_failure(0..20u32, 3, |i| {
            let (running, most) = (&running, &most);
            async move {
                let now = running.fetch_add(1, Ordering::Relaxed) + 1;
                most.fetch_max(now, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(2)).await;
                running.fetch_sub(1, Ordering::Relaxed);
                Ok::<_, ()>(i * 2)
            }
        })
        .await;
        let doubled: Vec<u32> = results.into_iter().map(|r| r.unwrap().unwrap()).collect();
        assert_eq!(doubled, (0..20).map(|i| i * 2).collect::<Vec<_>>());
        assert!(most.load(Ordering::Relaxed) <= 3);
    }
}
