//! Where the library's operations run for the server: a few threads, each a single-threaded
//! tokio runtime with a `LocalSet`. The operations' futures borrow the session they are given
//! and are not all provably `Send` (closures returning async blocks over borrowed data), so a
//! handler sends a job — a `Send` closure that builds the future — and awaits its answer; the
//! future itself never moves between threads. The HTTP server, the event streams and the
//! watches stay on the main runtime.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{mpsc, oneshot};

use super::error::ApiError;
use crate::ErrorKind;

type Job = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// The threads and the next one to use.
#[derive(Debug)]
pub struct Workers {
    senders: Vec<mpsc::UnboundedSender<Job>>,
    next: AtomicUsize,
}

impl Workers {
    /// `threads` workers (at least one).
    pub fn start(threads: usize) -> std::io::Result<Workers> {
        let mut senders = Vec::new();
        for index in 0..threads.max(1) {
            let (sender, mut receiver) = mpsc::unbounded_channel::<Job>();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            std::thread::Builder::new()
                .name(format!("addonctl-serve-{index}"))
                .spawn(move || {
                    let local = tokio::task::LocalSet::new();
                    local.block_on(&runtime, async move {
                        while let Some(job) = receiver.recv().await {
                            tokio::task::spawn_local(job());
                        }
                    });
                })?;
            senders.push(sender);
        }
        Ok(Workers {
            senders,
            next: AtomicUsize::new(0),
        })
    }

    /// Runs the future `make` builds on a worker and answers its output.
    pub async fn run<T, F, Fut>(&self, make: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = T> + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move || {
            Box::pin(async move {
                // The handler may have gone (its client hung up): nothing to answer.
                let _ = answer.send(make().await);
            })
        });
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.senders.len();
        let gone = || ApiError::of_kind(ErrorKind::Internal, "the server's worker stopped");
        self.senders[index].send(job).map_err(|_| gone())?;
        answered.await.map_err(|_| gone())
    }
}
