//! Why an addon's record or one of its revisions cannot be used. Here, below the state that
//! reads and writes them, so that the crate's error holds them without importing a stage.

use crate::model::wire::LABEL_RECORD_OF;
use crate::model::ErrorKind;

/// Errors reading or writing a record.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// A record Secret (or one of its shards) is missing, damaged or not addonctl's format.
    #[error("the record `{secret}` of addon `{addon}` cannot be read: {reason}; nothing was changed (inspect it with `kubectl get secret -n {namespace} {secret} -o yaml`, its shards with `kubectl get secret -n {namespace} -l {LABEL_RECORD_OF}={addon}`)")]
    Unreadable {
        /// The addon.
        addon: String,
        /// The system namespace.
        namespace: String,
        /// The Secret.
        secret: String,
        /// Why.
        reason: String,
    },
    /// The record would not fit its storage budget.
    #[error("the record of addon `{addon}` would take {bytes} bytes compressed ({pairs} object×cluster pairs), over its budget of {limit} bytes; nothing was applied: target fewer clusters or split the addon")]
    TooLarge {
        /// The addon.
        addon: String,
        /// The compressed size it would take.
        bytes: usize,
        /// Its budget.
        limit: usize,
        /// Object×cluster pairs it lists.
        pairs: usize,
    },
}

impl RecordError {
    /// What kind of failure it is: a record that would not fit is the request's
    /// ([`ErrorKind::Invalid`]: fewer clusters, a smaller addon); one that cannot be read is
    /// damaged state ([`ErrorKind::Internal`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            RecordError::TooLarge { .. } => ErrorKind::Invalid,
            RecordError::Unreadable { .. } => ErrorKind::Internal,
        }
    }
}

/// Errors about revisions.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    /// No such revision.
    #[error("addon `{addon}` has no revision {revision}; it keeps {available} (see `addonctl history {addon}`)")]
    NoSuchRevision {
        /// The addon.
        addon: String,
        /// The revision asked for.
        revision: u32,
        /// The revisions kept, as text.
        available: String,
    },
    /// There is no revision before the current one.
    #[error("addon `{addon}` has no revision before the current one to roll back to (see `addonctl history {addon}`)")]
    NoPrevious {
        /// The addon.
        addon: String,
    },
    /// The addon has no record (not installed by addonctl).
    #[error(
        "addon `{addon}` has no history: it is not installed by addonctl (see `addonctl list`)"
    )]
    NoHistory {
        /// The addon.
        addon: String,
    },
    /// The revision Secret is missing or damaged.
    #[error("revision {revision} of addon `{addon}` cannot be used: {reason}")]
    Unusable {
        /// The addon.
        addon: String,
        /// The revision.
        revision: u32,
        /// Why.
        reason: String,
    },
}

impl RevisionError {
    /// What kind of failure it is: a revision (or history) asked for that is not kept is
    /// [`ErrorKind::NotFound`]; a kept one whose Secret is missing or damaged is
    /// [`ErrorKind::Internal`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            RevisionError::NoSuchRevision { .. }
            | RevisionError::NoPrevious { .. }
            | RevisionError::NoHistory { .. } => ErrorKind::NotFound,
            RevisionError::Unusable { .. } => ErrorKind::Internal,
        }
    }
}
