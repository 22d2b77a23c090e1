//! Safe reading of gzip-compressed tar archives (`.tgz`) from registries.
//!
//! An archive from a registry is untrusted. [`read_tgz`] reads it fully in memory with limits:
//! the total uncompressed size (a gzip bomb stops at the limit), the size of each file, and the
//! number of entries. Entries whose path is absolute or contains `..`, and links that point
//! outside the archive, fail the whole archive with [`Error::InvalidPath`]; other links,
//! directories and special files are ignored. The single top directory that archives usually
//! have (`./<dir>/…` or `<name>/…`, with or without a Helm `Chart.yaml`) is stripped, so paths come
//! out relative to the addon root.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use flate2::read::GzDecoder;

use crate::source::{Error, Result, MAX_FILES_PER_ADDON, MAX_FILE_SIZE};

/// The limits [`read_tgz`] enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// The most uncompressed bytes (tar headers included) read from the archive.
    pub max_total_bytes: u64,
    /// The largest file.
    pub max_file_bytes: u64,
    /// The most entries (files, directories, links).
    pub max_entries: usize,
}

impl Default for ArchiveLimits {
    fn default() -> Self {
        ArchiveLimits {
            max_total_bytes: 64 * 1024 * 1024,
            max_file_bytes: MAX_FILE_SIZE,
            max_entries: MAX_FILES_PER_ADDON,
        }
    }
}

/// Reads the regular files of a `.tgz` archive as `(path, bytes)` pairs sorted by path, with the
/// common top directory stripped. `name` names the archive in errors.
pub fn read_tgz(
    registry: &str,
    name: &str,
    bytes: &[u8],
    limits: &ArchiveLimits,
) -> Result<Vec<(String, Vec<u8>)>> {
    let exceeded = Arc::new(AtomicBool::new(false));
    let counted = Capped {
        inner: GzDecoder::new(bytes),
        left: limits.max_total_bytes,
        exceeded: Arc::clone(&exceeded),
    };
    let mut archive = tar::Archive::new(counted);
    let invalid = |message: String| Error::InvalidContent {
        registry: registry.to_owned(),
        message: format!("`{name}` is not a valid gzip-compressed tar archive: {message}"),
    };
    let too_large = |size: u64, limit: u64, path: String| Error::TooLarge {
        registry: registry.to_owned(),
        path,
        size,
        limit,
    };
    let bomb = || {
        too_large(
            limits.max_total_bytes.saturating_add(1),
            limits.max_total_bytes,
            format!("{name} (uncompressed)"),
        )
    };
    let io_error = |e: std::io::Error| {
        if exceeded.load(Ordering::Relaxed) {
            bomb()
        } else {
            invalid(e.to_string())
        }
    };

    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut count = 0usize;
    for entry in archive.entries().map_err(io_error)? {
        let mut entry = entry.map_err(io_error)?;
        count += 1;
        if count > limits.max_entries {
            return Err(Error::InvalidContent {
                registry: registry.to_owned(),
                message: format!("`{name}` has more than {} entries", limits.max_entries),
            });
        }
        let raw =
            String::from_utf8(entry.path_bytes().into_owned()).map_err(|_| Error::InvalidPath {
                registry: registry.to_owned(),
                path: String::from_utf8_lossy(&entry.path_bytes()).into_owned(),
                reason: format!("a path in `{name}` is not valid UTF-8"),
            })?;
        let path = normalize(registry, name, &raw)?;
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() {
            let target = entry
                .link_name_bytes()
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap_or_default();
            check_link(registry, name, &path, &target, kind.is_hard_link())?;
            continue;
        }
        if !(kind.is_file() || kind.is_contiguous()) || path.is_empty() {
            continue;
        }
        let size = entry.header().size().map_err(io_error)?;
        if size > limits.max_file_bytes {
            return Err(too_large(size, limits.max_file_bytes, path));
        }
        let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        entry
            .by_ref()
            .take(limits.max_file_bytes + 1)
            .read_to_end(&mut data)
            .map_err(io_error)?;
        if data.len() as u64 > limits.max_file_bytes {
            return Err(too_large(data.len() as u64, limits.max_file_bytes, path));
        }
        files.insert(path, data);
    }
    // Read to the end of the gzip stream so that a truncated archive is noticed even when the
    // tar end marker came before the cut.
    let mut rest = archive.into_inner();
    std::io::copy(&mut rest, &mut std::io::sink()).map_err(io_error)?;
    if files.is_empty() {
        return Err(invalid("it holds no files".to_owned()));
    }
    Ok(strip_top_directory(files))
}

/// A reader that fails once more than `left` bytes were read.
struct Capped<R> {
    inner: R,
    left: u64,
    exceeded: Arc<AtomicBool>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            self.exceeded.store(true, Ordering::Relaxed);
            return Err(std::io::Error::other(
                "the archive is too large uncompressed",
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Checks an entry path and returns it without `.` and empty segments.
fn normalize(registry: &str, name: &str, raw: &str) -> Result<String> {
    let bad = |reason: &str| Error::InvalidPath {
        registry: registry.to_owned(),
        path: raw.to_owned(),
        reason: format!("{reason} (in `{name}`)"),
    };
    if raw.starts_with('/')
        || raw.contains('\\')
        || raw.split('/').next().is_some_and(|s| s.contains(':'))
    {
        return Err(bad("archive paths must be relative"));
    }
    let mut segments = Vec::new();
    for segment in raw.split('/') {
        match segment {
            "" | "." => {}
            ".." => return Err(bad("archive paths must not contain `..`")),
            s => segments.push(s),
        }
    }
    Ok(segments.join("/"))
}

/// Refuses a link whose target leaves the archive.
fn check_link(registry: &str, name: &str, path: &str, target: &str, hard: bool) -> Result<()> {
    let escapes = || Error::InvalidPath {
        registry: registry.to_owned(),
        path: path.to_owned(),
        reason: format!("it links to `{target}`, outside the archive (in `{name}`)"),
    };
    if target.starts_with('/') || target.contains('\\') {
        return Err(escapes());
    }
    // A hard link's target is relative to the archive root, a symlink's to its directory.
    let mut depth: Vec<&str> = if hard {
        Vec::new()
    } else {
        let mut parent: Vec<&str> = path.split('/').collect();
        parent.pop();
        parent
    };
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return Err(escapes());
                }
            }
            s => depth.push(s),
        }
    }
    Ok(())
}

/// Strips the one directory every file is under (when there is one and no file is at the root).
fn strip_top_directory(files: BTreeMap<String, Vec<u8>>) -> Vec<(String, Vec<u8>)> {
    let mut tops = files.keys().map(|p| p.split_once('/').map(|(top, _)| top));
    let common = match tops.next() {
        Some(Some(first)) if tops.all(|t| t == Some(first)) => Some(first.to_owned()),
        _ => None,
    };
    files
        .into_iter()
        .map(|(path, bytes)| match &common {
            Some(top) => (path[top.len() + 1..].to_owned(), bytes),
            None => (path, bytes),
        })
        .collect()
}

/// Writes `(path, bytes)` pairs as a deterministic `.tgz` (fixed times and modes, sorted), every
/// path under `prefix/` when a prefix is given.
pub fn write_tgz(prefix: Option<&str>, files: &[(String, Vec<u8>)]) -> std::io::Result<Vec<u8>> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(encoder);
    builder.mode(tar::HeaderMode::Deterministic);
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, bytes) in sorted {
        let full = match prefix {
            Some(p) => format!("{p}/{path}"),
            None => path.clone(),
        };
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mtime(0);
        builder.append_data(&mut header, &full, bytes.as_slice())?;
    }
    builder.into_inner()?.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tgz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let files: Vec<(String, Vec<u8>)> = entries
            .iter()
            .map(|(p, b)| ((*p).to_owned(), b.to_vec()))
            .collect();
        write_tgz(None, &files).unwrap()
    }

    /// An archive with one raw entry whose name is written as is (bypassing `tar`'s checks).
    fn raw_entry(path: &str, kind: tar::EntryType, link: Option<&str>) -> Vec<u8> {
        let mut header = tar::Header::new_old();
        {
            let old = header.as_old_mut();
            old.name[..path.len()].copy_from_slice(path.as_bytes());
            if let Some(link) = link {
                old.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
        }
        header.set_entry_type(kind);
        header.set_size(if link.is_some() { 0 } else { 2 });
        header.set_mode(0o644);
        header.set_cksum();
        let mut tar_bytes = header.as_bytes().to_vec();
        if link.is_none() {
            let mut block = vec![0u8; 512];
            block[..2].copy_from_slice(b"hi");
            tar_bytes.extend(block);
        }
        tar_bytes.extend(vec![0u8; 1024]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar_bytes).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn the_top_directory_is_stripped_in_both_layouts() {
        for prefix in ["./addon/", "addon/"] {
            let archive = tgz(&[
                (&format!("{prefix}metadata.yaml"), b"name: a"),
                (&format!("{prefix}resources/x.yaml"), b"kind: X"),
            ]);
            let files = read_tgz("r", "a.tgz", &archive, &ArchiveLimits::default()).unwrap();
            let paths: Vec<_> = files.iter().map(|f| f.0.as_str()).collect();
            assert_eq!(paths, ["metadata.yaml", "resources/x.yaml"], "{prefix}");
        }
        let flat = tgz(&[("metadata.yaml", b"name: a"), ("resources/x.yaml", b"k")]);
        let files = read_tgz("r", "a.tgz", &flat, &ArchiveLimits::default()).unwrap();
        assert_eq!(files[0].0, "metadata.yaml");
    }

    #[test]
    fn traversal_absolute_and_escaping_links_are_refused() {
        for (path, kind, link) in [
            ("../evil.yaml", tar::EntryType::Regular, None),
            ("a/../../evil.yaml", tar::EntryType::Regular, None),
            ("/etc/evil", tar::EntryType::Regular, None),
            ("a/link", tar::EntryType::Symlink, Some("../../etc/passwd")),
            ("a/link", tar::EntryType::Symlink, Some("/etc/passwd")),
            ("a/hard", tar::EntryType::Link, Some("../x")),
        ] {
            let archive = raw_entry(path, kind, link);
            let err = read_tgz("r", "a.tgz", &archive, &ArchiveLimits::default()).unwrap_err();
            assert!(matches!(err, Error::InvalidPath { .. }), "{path}: {err}");
        }
        // A link that stays inside is ignored, not followed.
        let inside = raw_entry("a/b/link", tar::EntryType::Symlink, Some("../c"));
        let err = read_tgz("r", "a.tgz", &inside, &ArchiveLimits::default()).unwrap_err();
        assert!(err.to_string().contains("holds no files"), "{err}");
    }

    #[test]
    fn limits_are_enforced() {
        let limits = ArchiveLimits {
            max_total_bytes: 64 * 1024,
            max_file_bytes: 1024,
            max_entries: 3,
        };
        let big = tgz(&[("a/big.yaml", &vec![b'x'; 2048])]);
        assert!(matches!(
            read_tgz("r", "a.tgz", &big, &limits),
            Err(Error::TooLarge { .. })
        ));
        let many = tgz(&[("a/1", b"1"), ("a/2", b"2"), ("a/3", b"3"), ("a/4", b"4")]);
        assert!(matches!(
            read_tgz("r", "a.tgz", &many, &limits),
            Err(Error::InvalidContent { .. })
        ));
        // A bomb: 1 MiB of zeros in one entry compresses to ~1 KiB.
        let limits = ArchiveLimits {
            max_file_bytes: 4 * 1024 * 1024,
            ..limits
        };
        let bomb = tgz(&[("a/zeros", &vec![0u8; 1024 * 1024])]);
        assert!(bomb.len() < 8 * 1024);
        let err = read_tgz("r", "a.tgz", &bomb, &limits).unwrap_err();
        assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    }

    #[test]
    fn truncated_and_corrupt_archives_are_invalid_content() {
        let good = tgz(&[("a/metadata.yaml", &vec![b'n'; 4000])]);
        for bad in [
            &good[..good.len() / 2],
            &good[..10],
            b"not gzip at all".as_slice(),
            &[],
        ] {
            let err = read_tgz("r", "a.tgz", bad, &ArchiveLimits::default()).unwrap_err();
            assert!(matches!(err, Error::InvalidContent { .. }), "{err}");
        }
    }
}
