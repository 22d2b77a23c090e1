//! The clusters of one call (an apply's surveys and dispatch, a drift check, a health read) worked
//! on over every core: each cluster's work is a job for the process's cluster threads
//! ([`workers::Workers`], one per CPU unless [`set_threads`] says otherwise), so the CPU of many
//! clusters (encoding, parsing, comparing) runs in parallel while each waits on its answers.
//!
//! Guarantees: at most [`CLUSTERS_PER_CALL`] clusters of one call and at most
//! [`CLUSTERS_PER_PROCESS`] clusters of all calls together are in flight (a semaphore): no
//! unbounded fan-out, whatever the number of clusters or of `Addon`s reconciled at once. A
//! cluster whose work stops before its end (it panicked) is answered [`Lost`], so that its caller
//! reports it as failed and keeps its inventory, as for any other failure. Without a cluster
//! thread (none could start), the work runs on the caller's task, as before.

pub(crate) mod workers;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use futures::stream::{self, StreamExt};
use tokio::sync::Semaphore;
use tracing::Instrument as _;

pub use crate::state::clusters::CLUSTER_CONCURRENCY as CLUSTERS_PER_CALL;

/// Clusters in flight in the whole process, over every call (several `Addon`s reconciled at
/// once).
pub const CLUSTERS_PER_PROCESS: usize = 4 * CLUSTERS_PER_CALL;

/// One cluster's work, as handed to a cluster thread.
type Job = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>;

static THREADS: OnceLock<usize> = OnceLock::new();
static POOL: OnceLock<workers::Workers<Job>> = OnceLock::new();
static SLOTS: Semaphore = Semaphore::const_new(CLUSTERS_PER_PROCESS);

/// Sets the number of cluster threads (at least one) before the first call; `false` when they
/// were set or started already.
pub fn set_threads(threads: usize) -> bool {
    THREADS.set(threads.max(1)).is_ok()
}

/// The number of cluster threads: as set, else the CPUs available.
#[must_use]
pub fn threads() -> usize {
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

fn pool() -> &'static workers::Workers<Job> {
    POOL.get_or_init(|| workers::Workers::start(threads(), "addonctl-cluster", |job: Job| job()))
}

/// A cluster's work stopped before its end (it panicked, or its thread stopped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost;

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the cluster's work stopped unexpectedly (see the log); it is retried next time",
        )
    }
}

/// Runs `work` for every key (a cluster) on the cluster threads, bounded as the module says:
/// each key with its answer, in the order they finish (a caller reports progress as they come).
/// `work` gets the key and owns (or shares through an `Arc`) whatever it reads.
pub fn each<K, O, F, Fut>(
    keys: impl IntoIterator<Item = K>,
    work: F,
) -> impl futures::Stream<Item = (K, Result<O, Lost>)>
where
    K: Clone + Send + 'static,
    O: Send + 'static,
    F: Fn(K) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = O> + 'static,
{
    let work = Arc::new(work);
    let span = tracing::Span::current();
    stream::iter(keys)
        .map(move |key| {
            let work = Arc::clone(&work);
            let span = span.clone();
            async move {
                // The semaphore is never closed; a closed one would only lift the bound.
                let _slot = SLOTS.acquire().await.ok();
                let (reply, answer) = tokio::sync::oneshot::channel();
                let job_key = key.clone();
                let job: Job = Box::new(move || {
                    Box::pin(
                        async move {
                            let answer = work(job_key).await;
                            // What the work shares goes before its answer: the caller may
                            // take it back as soon as every answer is in.
                            drop(work);
                            let _ = reply.send(answer);
                        }
                        .instrument(span),
                    )
                });
                let answer = match pool().send(job) {
                    Ok(()) => answer.await.map_err(|_| Lost),
                    Err(job) => {
                        job().await;
                        answer.await.map_err(|_| Lost)
                    }
                };
                if answer.is_err() {
                    tracing::error!("a cluster's work stopped before its end");
                }
                (key, answer)
            }
        })
        .buffer_unordered(CLUSTERS_PER_CALL)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn every_key_is_answered_and_a_panicking_one_is_lost() {
        let answers = each(0..300_u32, |n| async move {
            tokio::task::yield_now().await;
            assert!(n != 7, "cluster 7 fails");
            n * 2
        })
        .collect::<Vec<_>>()
        .await;
        assert_eq!(answers.len(), 300);
        for (n, answer) in answers {
            if n == 7 {
                assert_eq!(answer, Err(Lost));
            } else {
                assert_eq!(answer, Ok(n * 2));
            }
        }
    }

    #[tokio::test]
    async fn no_more_than_the_bound_of_one_call_are_in_flight() {
        static NOW: AtomicUsize = AtomicUsize::new(0);
        static MOST: AtomicUsize = AtomicUsize::new(0);
        let answers = each(0..(3 * CLUSTERS_PER_CALL), |_| async {
            let now = NOW.fetch_add(1, Ordering::SeqCst) + 1;
            MOST.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            NOW.fetch_sub(1, Ordering::SeqCst);
        })
        .collect::<Vec<_>>()
        .await;
        assert_eq!(answers.len(), 3 * CLUSTERS_PER_CALL);
        let most = MOST.load(Ordering::SeqCst);
        assert!(most <= CLUSTERS_PER_CALL, "{most} in flight");
        assert!(most > 1, "the clusters ran one at a time");
    }
}
