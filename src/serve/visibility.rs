//! Who sees system addons: an addon tagged `system` is seen — in every list, page, plan, status
//! and event — only by a subject allowed to `create` `addons.addonctl.io` (the `Addon` resource
//! the controller reconciles) in the system namespace: who may declare addons may see them all.
//! The answer comes from the API server (a SelfSubjectAccessReview for the kubeconfig's user, so
//! group bindings count as Kubernetes counts them) and is kept for [`TTL`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::context::{Identity, Session};

/// How long an answer is kept.
pub const TTL: Duration = Duration::from_secs(30);

/// At most this many identities' answers are kept.
const CAPACITY: usize = 1024;

/// The permission that shows system addons: `(verb, group, resource)` in the system namespace.
pub const SYSTEM_PERMISSION: (&str, &str, &str) = ("create", "addonctl.io", "addons");

/// The answers, per identity.
#[derive(Debug, Default)]
pub struct Cache {
    answers: Mutex<HashMap<Option<Identity>, (Instant, bool)>>,
}

impl Cache {
    /// Whether the session's caller may see system addons. An API server that does not answer
    /// hides them (the safe side), and the answer is not kept.
    pub async fn may_see_system(&self, session: &Session) -> bool {
        let key = session.identity().cloned();
        if let Some(answer) = self.cached(key.as_ref()) {
            return answer;
        }
        let ctx = session.ctx();
        let (verb, group, resource) = SYSTEM_PERMISSION;
        match ctx
            .cluster
            .can_i(verb, group, resource, Some(&ctx.namespace))
            .await
        {
            Ok(answer) => {
                self.keep(key, answer);
                answer
            }
            Err(e) => {
                tracing::warn!("cannot ask whether system addons may be shown: {e}");
                false
            }
        }
    }

    fn cached(&self, key: Option<&Identity>) -> Option<bool> {
        let answers = self.answers.lock().ok()?;
        answers
            .get(&key.cloned())
            .filter(|(at, _)| at.elapsed() < TTL)
            .map(|(_, answer)| *answer)
    }

    fn keep(&self, key: Option<Identity>, answer: bool) {
        let Ok(mut answers) = self.answers.lock() else {
            return;
        };
        if answers.len() >= CAPACITY {
            answers.retain(|_, (at, _)| at.elapsed() < TTL);
            if answers.len() >= CAPACITY {
                answers.clear();
            }
        }
        answers.insert(key, (Instant::now(), answer));
    }
}
