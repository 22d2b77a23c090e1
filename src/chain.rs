//! One line for an error and its causes. A leaf: it imports nothing of the crate, so every
//! module (sources, clusters, the stages above them) may use it.

/// An error and its causes on one line (`a: b: c`), skipping a cause whose text the line already
/// holds (libraries often repeat their source in their own message).
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let next = cause.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = cause.source();
    }
    text
}
