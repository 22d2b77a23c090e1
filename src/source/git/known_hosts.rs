//! The known_hosts file ssh host keys are checked against: plain, wildcard and hashed host
//! names, `[host]:port` for other ports, `@revoked` and `@cert-authority` markers.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use hmac::{KeyInit, Mac};
use sha2::Digest;

use super::target::SshTarget;

/// The file's entries (read once per connection).
#[derive(Debug, Clone)]
pub struct KnownHosts {
    /// The file.
    pub path: PathBuf,
    /// Whether it exists.
    pub exists: bool,
    entries: Vec<Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    line: usize,
    revoked: bool,
    patterns: Vec<Pattern>,
    key: Vec<u8>,
}

#[derive(Debug, Clone)]
enum Pattern {
    Plain { negated: bool, glob: String },
    Hashed { salt: Vec<u8>, hash: Vec<u8> },
}

/// What the file says of a host's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The key is known for the host.
    Known,
    /// The host is listed with other keys of the same type (at these lines).
    Changed(Vec<usize>),
    /// The key is listed as revoked (at this line).
    Revoked(usize),
    /// The host is not listed with a key of this type (the types it is listed with).
    Unknown(Vec<String>),
}

/// The default file: `~/.ssh/known_hosts`.
pub fn default_path() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".ssh").join("known_hosts"))
}

impl KnownHosts {
    /// Reads `path`; a file that does not exist lists no host.
    pub fn load(path: &Path) -> std::io::Result<KnownHosts> {
        let text = match fs_err::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(KnownHosts {
            path: path.to_path_buf(),
            exists: text.is_some(),
            entries: text.as_deref().map(parse).unwrap_or_default(),
        })
    }

    /// What the file says of `key` (the key blob, as the server sent it) for `target`.
    pub fn check(&self, target: &SshTarget, key: &[u8]) -> Verdict {
        let name = target.known_hosts_name();
        let kind = key_type(key);
        let mut changed = Vec::new();
        let mut other_types = Vec::new();
        let mut known = false;
        for entry in self.entries.iter().filter(|e| e.matches(&name)) {
            if entry.key == key {
                if entry.revoked {
                    return Verdict::Revoked(entry.line);
                }
                known = true;
            } else if entry.revoked {
                // A revoked key that is not this one says nothing about this one.
            } else if key_type(&entry.key) == kind {
                changed.push(entry.line);
            } else if let Some(other) = key_type(&entry.key) {
                other_types.push(other.to_owned());
            }
        }
        if known {
            Verdict::Known
        } else if !changed.is_empty() {
            Verdict::Changed(changed)
        } else {
            other_types.sort();
            other_types.dedup();
            Verdict::Unknown(other_types)
        }
    }
}

impl Entry {
    fn matches(&self, name: &str) -> bool {
        let mut matched = false;
        for pattern in &self.patterns {
            match pattern {
                Pattern::Plain { negated, glob } => {
                    if glob_matches(&glob.to_ascii_lowercase(), &name.to_ascii_lowercase()) {
                        if *negated {
                            return false;
                        }
                        matched = true;
                    }
                }
                Pattern::Hashed { salt, hash } => {
                    let Ok(mut mac) = hmac::Hmac::<sha1::Sha1>::new_from_slice(salt) else {
                        continue;
                    };
                    mac.update(name.as_bytes());
                    if mac.verify_slice(hash).is_ok() {
                        matched = true;
                    }
                }
            }
        }
        matched
    }
}

fn parse(text: &str) -> Vec<Entry> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut entries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let mut first = fields.next().unwrap_or_default();
        let mut revoked = false;
        if first.starts_with('@') {
            match first {
                "@revoked" => revoked = true,
                // Certificate authorities: host certificates are not used here.
                _ => continue,
            }
            first = fields.next().unwrap_or_default();
        }
        let (Some(_key_type), Some(key)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Ok(key) = b64.decode(key) else { continue };
        let patterns = first
            .split(',')
            .filter(|p| !p.is_empty())
            .filter_map(|p| {
                if let Some(hashed) = p.strip_prefix("|1|") {
                    let (salt, hash) = hashed.split_once('|')?;
                    Some(Pattern::Hashed {
                        salt: b64.decode(salt).ok()?,
                        hash: b64.decode(hash).ok()?,
                    })
                } else {
                    let (negated, glob) = match p.strip_prefix('!') {
                        Some(rest) => (true, rest),
                        None => (false, p),
                    };
                    Some(Pattern::Plain {
                        negated,
                        glob: glob.to_owned(),
                    })
                }
            })
            .collect();
        entries.push(Entry {
            line: index + 1,
            revoked,
            patterns,
            key,
        });
    }
    entries
}

/// `*` and `?` wildcards, as OpenSSH's host patterns.
fn glob_matches(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// The type a key blob names (its first SSH string), e.g. `ssh-ed25519`.
pub fn key_type(key: &[u8]) -> Option<&str> {
    let length = u32::from_be_bytes(key.get(..4)?.try_into().ok()?) as usize;
    std::str::from_utf8(key.get(4..4 + length)?).ok()
}

/// The key's fingerprint as OpenSSH shows it: `SHA256:<base64 without padding>`.
pub fn fingerprint(key: &[u8]) -> String {
    let digest = sha2::Sha256::digest(key);
    format!(
        "SHA256:{}",
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(digest)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(host: &str, port: u16) -> SshTarget {
        SshTarget {
            user: None,
            host: host.into(),
            port,
        }
    }

    fn blob(kind: &str, body: &[u8]) -> Vec<u8> {
        let mut out = (u32::try_from(kind.len()).unwrap_or(0))
            .to_be_bytes()
            .to_vec();
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(body);
        out
    }

    fn hosts(text: &str) -> KnownHosts {
        KnownHosts {
            path: PathBuf::from("known_hosts"),
            exists: true,
            entries: parse(text),
        }
    }

    #[test]
    fn plain_wildcard_negated_and_hashed_names_match() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let key = blob("ssh-ed25519", b"key-one");
        let other = blob("ssh-ed25519", b"key-two");
        let rsa = blob("ssh-rsa", b"rsa-key");
        let encoded = b64.encode(&key);
        let salt = b"0123456789abcdefghij";
        let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(salt).unwrap();
        mac.update(b"[hashed.example.invalid]:2222");
        let hash = mac.finalize().into_bytes();
        let text = format!(
            "# comment\n\
             plain.example.invalid ssh-ed25519 {encoded}\n\
             [ported.example.invalid]:2222,other.example.invalid ssh-ed25519 {encoded} c\n\
             *.wild.example.invalid,!bad.wild.example.invalid ssh-ed25519 {encoded}\n\
             |1|{}|{} ssh-ed25519 {encoded}\n\
             rsa-only.example.invalid ssh-rsa {}\n\
             @cert-authority * ssh-ed25519 {encoded}\n",
            b64.encode(salt),
            b64.encode(hash),
            b64.encode(&rsa),
        );
        let known = hosts(&text);
        for (host, port) in [
            ("plain.example.invalid", 22),
            ("PLAIN.example.invalid", 22),
            ("ported.example.invalid", 2222),
            ("a.wild.example.invalid", 22),
            ("hashed.example.invalid", 2222),
        ] {
            assert_eq!(
                known.check(&target(host, port), &key),
                Verdict::Known,
                "{host}:{port}"
            );
        }
        // Another port is another host; a negated pattern excludes; no CA lines.
        for (host, port) in [
            ("plain.example.invalid", 2222),
            ("ported.example.invalid", 22),
            ("bad.wild.example.invalid", 22),
            ("hashed.example.invalid", 22),
            ("nowhere.example.invalid", 22),
        ] {
            assert_eq!(
                known.check(&target(host, port), &key),
                Verdict::Unknown(Vec::new()),
                "{host}:{port}"
            );
        }
        assert_eq!(
            known.check(&target("plain.example.invalid", 22), &other),
            Verdict::Changed(vec![2])
        );
        assert_eq!(
            known.check(&target("rsa-only.example.invalid", 22), &key),
            Verdict::Unknown(vec!["ssh-rsa".to_owned()])
        );
    }

    #[test]
    fn revoked_keys_are_refused() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let key = blob("ssh-ed25519", b"key-one");
        let text = format!(
            "h.example.invalid ssh-ed25519 {0}\n@revoked * ssh-ed25519 {0}\n",
            b64.encode(&key)
        );
        assert_eq!(
            hosts(&text).check(&target("h.example.invalid", 22), &key),
            Verdict::Revoked(2)
        );
    }

    #[test]
    fn fingerprints_are_openssh_style() {
        // `ssh-keygen -lf` of this key prints this fingerprint.
        let key = base64::engine::general_purpose::STANDARD
            .decode("AAAAC3NzaC1lZDI1NTE5AAAAIFnqfSAtjGa/kT3qfPIp7/Ya26bjzh5lHkzbFt2lobrY")
            .unwrap();
        assert_eq!(key_type(&key), Some("ssh-ed25519"));
        assert_eq!(
            fingerprint(&key),
            "SHA256:OI8yyz4Reu/B+6/wCHK6sYMZlrkmgp1umGkZk6ppBDA"
        );
    }
}
