//! Reading the files a user names for parameters (`-f values.yaml`, `--set-file key=path`):
//! through a bounded reader, so `/dev/zero`, a FIFO or a huge file fails with a clear error after
//! at most [`MAX_INPUT_BYTES`] bytes instead of exhausting memory (a size from `stat` is not
//! trusted: `/dev/zero` reports 0).

use std::io::Read;
use std::path::Path;

use super::error::{Error, Result};

/// The largest values file or `--set-file` file read: the cap of a registry file.
pub const MAX_INPUT_BYTES: u64 = crate::source::MAX_FILE_SIZE;

/// Reads a UTF-8 text file of at most [`MAX_INPUT_BYTES`]; `what` names it in errors
/// (`values file`, `--set-file x`).
pub fn read_text(path: &Path, what: &str) -> Result<String> {
    read_text_capped(path, what, MAX_INPUT_BYTES)
}

fn read_text_capped(path: &Path, what: &str, cap: u64) -> Result<String> {
    let fail = |message: String| Error::File {
        what: what.to_owned(),
        path: path.display().to_string(),
        message,
    };
    let file = fs_err::File::open(path).map_err(|e| fail(io_message(&e)))?;
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(io_message(&e)))?;
    if bytes.len() as u64 > cap {
        return Err(fail(format!(
            "larger than {cap} bytes, the most addonctl reads from one file; pass a smaller file"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        fail(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The OS's message without the path `fs_err` prepends (the error names the path already).
fn io_message(error: &std::io::Error) -> String {
    match error.get_ref() {
        Some(inner) => inner
            .source()
            .map_or_else(|| error.kind().to_string(), ToString::to_string),
        None => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_stops_at_the_cap() {
        let err = read_text_capped(Path::new("/dev/zero"), "--set-file x", 1024).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("larger than 1024 bytes"), "{text}");
        assert!(text.contains("/dev/zero"), "{text}");
    }

    #[test]
    fn a_small_file_is_read_and_a_missing_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.yaml");
        fs_err::write(&path, "a: 1\n").unwrap();
        assert_eq!(read_text(&path, "values file").unwrap(), "a: 1\n");
        let err = read_text(&dir.path().join("missing"), "values file").unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
