//! Worker threads: each a single-threaded runtime whose local task set runs the jobs handed to
//! it (concurrently, as tasks: a job's future need not be `Send`) until its queue closes. A job
//! goes to the thread with the fewest jobs under way, so CPU-bound work (the reconciles of
//! several `Addon`s, the clusters of one apply) runs on several cores.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The threads' queues, each with the number of its jobs under way.
pub(crate) struct Workers<J> {
    queues: Vec<(tokio::sync::mpsc::UnboundedSender<J>, Arc<AtomicUsize>)>,
}

impl<J: Send + 'static> Workers<J> {
    /// Starts `threads` threads (at least one) named `<name>-<n>`, each running `run` on the
    /// jobs it is handed. A thread that cannot start is logged and left out.
    pub fn start<F, Fut>(threads: usize, name: &str, run: F) -> Self
    where
        F: Fn(J) -> Fut + Send + Clone + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let mut queues = Vec::with_capacity(threads.max(1));
        for n in 0..threads.max(1) {
            let (jobs, mut queue) = tokio::sync::mpsc::unbounded_channel::<J>();
            let busy = Arc::new(AtomicUsize::new(0));
            let under_way = Arc::clone(&busy);
            let run = run.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{name}-{n}"))
                .spawn(move || {
                    let runtime = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(runtime) => runtime,
                        Err(e) => {
                            tracing::error!("cannot start a worker thread's runtime: {e}");
                            return;
                        }
                    };
                    let local = tokio::task::LocalSet::new();
                    local.block_on(&runtime, async move {
                        while let Some(job) = queue.recv().await {
                            let under_way = Arc::clone(&under_way);
                            let done = run(job);
                            tokio::task::spawn_local(async move {
                                done.await;
                                under_way.fetch_sub(1, Ordering::Relaxed);
                            });
                        }
                    });
                });
            match spawned {
                Ok(_) => queues.push((jobs, busy)),
                Err(e) => tracing::error!("cannot start a worker thread: {e}"),
            }
        }
        Workers { queues }
    }

    /// Hands `job` to the thread with the fewest jobs under way; `Err` (the job back) when no
    /// thread runs.
    pub fn send(&self, job: J) -> std::result::Result<(), J> {
        let Some((queue, busy)) = self
            .queues
            .iter()
            .filter(|(queue, _)| !queue.is_closed())
            .min_by_key(|(_, busy)| busy.load(Ordering::Relaxed))
        else {
            return Err(job);
        };
        busy.fetch_add(1, Ordering::Relaxed);
        queue.send(job).map_err(|e| {
            busy.fetch_sub(1, Ordering::Relaxed);
            e.0
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use tokio::sync::{mpsc, oneshot};

    use super::*;

    /// A job that says which thread ran it, then waits for `release`.
    struct Job {
        ran_on: mpsc::UnboundedSender<String>,
        release: oneshot::Receiver<()>,
    }

    fn start(threads: usize) -> Workers<Job> {
        Workers::start(threads, "test-worker", |job: Job| async move {
            let thread = std::thread::current().name().unwrap_or_default().to_owned();
            let _ = job.ran_on.send(thread);
            let _ = job.release.await;
        })
    }

    #[tokio::test]
    async fn jobs_go_to_the_least_busy_thread_and_run_concurrently_on_each() {
        let workers = start(3);
        assert_eq!(workers.queues.len(), 3);
        let (ran_on, mut ran) = mpsc::unbounded_channel();
        let mut releases = Vec::new();
        // Six jobs that stay under way: two on each thread, none waiting for another.
        for _ in 0..6 {
            let (release, rx) = oneshot::channel();
            releases.push(release);
            let sent = workers.send(Job {
                ran_on: ran_on.clone(),
                release: rx,
            });
            assert!(sent.is_ok());
        }
        let mut per_thread: BTreeMap<String, usize> = BTreeMap::new();
        for _ in 0..6 {
            let thread = tokio::time::timeout(Duration::from_secs(10), ran.recv())
                .await
                .expect("every job starts while the others are under way")
                .expect("a job ran");
            *per_thread.entry(thread).or_default() += 1;
        }
        let expected: BTreeMap<String, usize> =
            (0..3).map(|n| (format!("test-worker-{n}"), 2)).collect();
        assert_eq!(per_thread, expected);
        // Job n went to thread n % 3 (the counts go up as a job is handed over). Jobs 0 and 3
        // done free thread 0: the next job goes there.
        let _ = releases.remove(3).send(());
        let _ = releases.remove(0).send(());
        let freed = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let busy: Vec<usize> = workers
                    .queues
                    .iter()
                    .map(|(_, b)| b.load(Ordering::Relaxed))
                    .collect();
                if busy.iter().sum::<usize>() == 4 {
                    return busy;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("two jobs finish");
        assert_eq!(freed, [0, 2, 2]);
        let (release, rx) = oneshot::channel();
        releases.push(release);
        assert!(workers
            .send(Job {
                ran_on: ran_on.clone(),
                release: rx,
            })
            .is_ok());
        let thread = tokio::time::timeout(Duration::from_secs(10), ran.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(thread, "test-worker-0");
        for release in releases {
            let _ = release.send(());
        }
    }

    #[tokio::test]
    async fn a_job_nobody_can_run_comes_back() {
        let workers: Workers<Job> = Workers { queues: Vec::new() };
        let (ran_on, _ran) = mpsc::unbounded_channel();
        let (_release, rx) = oneshot::channel();
        assert!(workers
            .send(Job {
                ran_on,
                release: rx
            })
            .is_err());
    }
}
