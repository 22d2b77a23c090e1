//! Addon versions as registries write them: semver, semver with a leading `v`, or anything else.

use std::cmp::Ordering;
use std::fmt;

/// A version string as written in `metadata.yaml`, with its semver reading when it has one.
///
/// A leading `v` is ignored for comparison (`v1.2.0` == `1.2.0`) but kept in [`AddonVersion::raw`],
/// since KubeVela labels carry the string exactly as written. `X.Y` is read as `X.Y.0`. Strings
/// that are not semver are accepted; they sort below every semver version and are never chosen by
/// a range.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AddonVersion {
    raw: String,
    semver: Option<semver::Version>,
}

impl AddonVersion {
    /// Reads a version string; never fails.
    pub fn parse(raw: &str) -> Self {
        let trimmed = raw.trim();
        let bare = trimmed
            .strip_prefix('v')
            .or_else(|| trimmed.strip_prefix('V'))
            .unwrap_or(trimmed);
        let semver = semver::Version::parse(bare).ok().or_else(|| {
            let parts: Vec<&str> = bare.split('.').collect();
            let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            if parts.len() == 2 && parts.iter().all(|p| numeric(p)) {
                semver::Version::parse(&format!("{bare}.0")).ok()
            } else {
                None
            }
        });
        AddonVersion {
            raw: trimmed.to_owned(),
            semver,
        }
    }

    /// The version exactly as written (trimmed).
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The semver reading, if the string is semver (after dropping a leading `v`).
    pub fn semver(&self) -> Option<&semver::Version> {
        self.semver.as_ref()
    }

    /// Whether this is a semver prerelease (`1.2.0-rc.1`).
    pub fn is_prerelease(&self) -> bool {
        self.semver.as_ref().is_some_and(|v| !v.pre.is_empty())
    }

    /// Whether two version strings name the same version (`v1.0.0` and `1.0.0` do).
    pub fn same_as(&self, other: &str) -> bool {
        let other = AddonVersion::parse(other);
        match (&self.semver, &other.semver) {
            (Some(a), Some(b)) => a == b,
            _ => self.raw == other.raw,
        }
    }
}

impl fmt::Display for AddonVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl Ord for AddonVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.semver, &other.semver) {
            (Some(a), Some(b)) => a.cmp(b).then_with(|| self.raw.cmp(&other.raw)),
            (Some(_), None) => Ordering::Greater,
            (None, Some(_)) => Ordering::Less,
            (None, None) => self.raw.cmp(&other.raw),
        }
    }
}

impl PartialOrd for AddonVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order_as_registries_write_them() {
        let cases = [
            ("1.2.3", Some("1.2.3"), false),
            ("v1.2.3", Some("1.2.3"), false),
            (" V2.0.0 ", Some("2.0.0"), false),
            ("1.4", Some("1.4.0"), false),
            ("1.0.0-rc.1", Some("1.0.0-rc.1"), true),
            ("latest", None, false),
            ("1.2.3.4", None, false),
        ];
        for (raw, semver, pre) in cases {
            let v = AddonVersion::parse(raw);
            assert_eq!(
                v.semver().map(ToString::to_string).as_deref(),
                semver,
                "{raw}"
            );
            assert_eq!(v.is_prerelease(), pre, "{raw}");
            assert_eq!(v.raw(), raw.trim());
        }
        let mut list: Vec<_> = ["latest", "v1.10.0", "1.9.0", "1.10.0-rc.1", "0.1"]
            .iter()
            .map(|s| AddonVersion::parse(s))
            .collect();
        list.sort();
        let sorted: Vec<_> = list.iter().map(AddonVersion::raw).collect();
        assert_eq!(sorted, ["latest", "0.1", "1.9.0", "1.10.0-rc.1", "v1.10.0"]);
        assert!(AddonVersion::parse("v1.0.0").same_as("1.0.0"));
        assert!(!AddonVersion::parse("1.0.0").same_as("1.0.1"));
    }
}

/// A version constraint as addons write them: comparators joined by `,` (or spaces), and
/// alternatives joined by `||`: `>=1.2.0`, `>= 2.3.3, < 3.0.0`, `^1.2`, `~1.2.3`, `1.x`, `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    raw: String,
    alternatives: Vec<semver::VersionReq>,
}

impl Constraint {
    /// Parses a constraint; the error says which part is wrong.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let mut alternatives = Vec::new();
        for part in raw.split("||") {
            let normalised = normalise_comparators(part);
            let req = semver::VersionReq::parse(&normalised)
                .map_err(|e| format!("invalid version constraint `{}`: {e}", part.trim()))?;
            alternatives.push(req);
        }
        Ok(Constraint {
            raw: raw.trim().to_owned(),
            alternatives,
        })
    }

    /// Whether `version` satisfies the constraint. Versions that are not semver never do;
    /// prereleases only when a comparator names a prerelease of the same version (semver rules).
    pub fn matches(&self, version: &AddonVersion) -> bool {
        version
            .semver()
            .is_some_and(|v| self.alternatives.iter().any(|req| req.matches(v)))
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// `>= 1.0 < 2` → `>=1.0, <2`; `v1.2.0` → `1.2.0`; empty → `*`.
fn normalise_comparators(part: &str) -> String {
    let is_operator = |c: char| "<>=~^".contains(c);
    let mut comparators: Vec<String> = Vec::new();
    let mut operator = String::new();
    for token in part
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
    {
        let version = token.trim_start_matches(is_operator);
        operator.push_str(&token[..token.len() - version.len()]);
        if version.is_empty() {
            continue;
        }
        let version = version.strip_prefix(['v', 'V']).unwrap_or(version);
        comparators.push(format!("{operator}{version}"));
        operator.clear();
    }
    if !operator.is_empty() {
        // A dangling operator: keep it so that parsing reports it.
        comparators.push(operator);
    }
    if comparators.is_empty() {
        "*".to_owned()
    } else {
        comparators.join(", ")
    }
}

#[cfg(test)]
mod constraint_tests {
    use super::*;

    #[test]
    fn constraints_match_as_written_in_registries() {
        let cases = [
            (">=1.2.0", "1.3.0", true),
            (">=1.2.0", "1.1.9", false),
            (">= 2.3.3, < 3.0.0", "2.9.0", true),
            (">= 2.3.3, < 3.0.0", "3.0.0", false),
            (">=2.3.3 <3.0.0", "2.4.0", true),
            ("^1.2", "1.9.0", true),
            ("^1.2", "2.0.0", false),
            ("~1.2.3", "1.2.9", true),
            ("~1.2.3", "1.3.0", false),
            ("1.x", "1.4.0", true),
            ("*", "0.0.1", true),
            ("", "5.0.0", true),
            ("^1 || ^3", "3.1.0", true),
            ("^1 || ^3", "2.1.0", false),
            (">=v1.0.0", "v1.2.0", true),
            (">=1.0.0", "1.1.0-rc.1", false),
            (">=1.1.0-rc.0", "1.1.0-rc.1", true),
            (">=1.0.0", "latest", false),
        ];
        for (constraint, version, expected) in cases {
            let c = Constraint::parse(constraint).unwrap();
            assert_eq!(
                c.matches(&AddonVersion::parse(version)),
                expected,
                "{constraint} vs {version}"
            );
        }
        assert!(Constraint::parse(">=> 1").is_err());
    }
}
