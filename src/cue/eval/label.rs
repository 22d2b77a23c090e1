//! Arc labels: a field's name and its kind. A quoted label `"#x"` or `"_x"` is a regular field
//! whose name merely starts with `#` or `_`; only identifiers make definitions and hidden
//! fields, so the kind is decided where the label is read, never from the name's text.

use std::sync::Arc;

/// What a label makes of its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LabelKind {
    /// A regular field (exported, counted by `len`, iterated by `for`, matched by patterns).
    Regular,
    /// A hidden field (`_x`).
    Hidden,
    /// A definition (`#X`, and the hidden definition `_#X`).
    Definition,
}

impl LabelKind {
    /// The kind of an identifier label or reference: `#x` and `_#x` are definitions, `_x`
    /// hidden, anything else regular.
    pub(crate) fn of_ident(name: &str) -> Self {
        if name.starts_with('#') || name.starts_with("_#") {
            LabelKind::Definition
        } else if name.starts_with('_') {
            LabelKind::Hidden
        } else {
            LabelKind::Regular
        }
    }

    pub(crate) fn is_regular(self) -> bool {
        self == LabelKind::Regular
    }
}

/// The key of an arc.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) name: Arc<str>,
    pub(crate) kind: LabelKind,
}

impl Key {
    /// A regular field (a quoted or interpolated label, a list index, a path of `export`).
    pub(crate) fn regular(name: Arc<str>) -> Self {
        Key {
            name,
            kind: LabelKind::Regular,
        }
    }

    /// The field an identifier names.
    pub(crate) fn ident(name: &str) -> Self {
        Key {
            name: Arc::from(name),
            kind: LabelKind::of_ident(name),
        }
    }

    pub(crate) fn is_regular(&self) -> bool {
        self.kind.is_regular()
    }
}

/// A borrowed key, to look arcs up without allocating (hashes as [`Key`] does).
#[derive(Debug, Clone, Copy, Hash)]
pub(crate) struct KeyRef<'a> {
    pub(crate) name: &'a str,
    pub(crate) kind: LabelKind,
}

impl<'a> KeyRef<'a> {
    pub(crate) fn regular(name: &'a str) -> Self {
        KeyRef {
            name,
            kind: LabelKind::Regular,
        }
    }

    pub(crate) fn ident(name: &'a str) -> Self {
        KeyRef {
            name,
            kind: LabelKind::of_ident(name),
        }
    }
}

impl indexmap::Equivalent<Key> for KeyRef<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.kind == key.kind && self.name == &*key.name
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, RandomState};

    use super::*;

    #[test]
    fn a_borrowed_key_hashes_and_compares_as_the_key() {
        let state = RandomState::new();
        for (name, kind) in [
            ("a", LabelKind::Regular),
            ("#a", LabelKind::Regular),
            ("#a", LabelKind::Definition),
            ("_a", LabelKind::Hidden),
        ] {
            let key = Key {
                name: Arc::from(name),
                kind,
            };
            let borrowed = KeyRef { name, kind };
            assert_eq!(state.hash_one(&key), state.hash_one(borrowed));
            assert!(indexmap::Equivalent::equivalent(&borrowed, &key));
        }
        let regular = KeyRef::regular("#a");
        assert!(!indexmap::Equivalent::equivalent(
            &regular,
            &Key::ident("#a")
        ));
        assert_eq!(Key::ident("_#a").kind, LabelKind::Definition);
        assert_eq!(Key::ident("_a").kind, LabelKind::Hidden);
        assert_eq!(Key::ident("a").kind, LabelKind::Regular);
    }
}
