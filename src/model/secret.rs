//! Secrets (registry tokens, passwords, passphrases) and the one way they are shown.
//!
//! A credential is a [`SecretString`] from the flag or file it is read from to the request
//! header it is sent in; only the store (writing the Secret or the local file) and the
//! request itself expose it. Everywhere else it shows as [`MASK`]: in `Debug` output through
//! [`masked`], in URLs through [`redact`], in text that may hold a secret value through
//! [`mask_text`] and [`mask_message`].

use reqwest::Url;
pub use secrecy::{ExposeSecret, SecretString};

/// What a secret shows as, wherever it is shown: `Debug` output, URLs, printed values and
/// objects, error messages and logs.
pub const MASK: &str = "******";

/// A secret as `Debug` output shows it: [`MASK`] when set.
pub fn masked(secret: Option<&SecretString>) -> Option<&'static str> {
    secret.map(|_| MASK)
}

/// A secret read from text (a flag, a Secret, a file); an empty text is no secret.
pub fn secret(text: impl Into<String>) -> Option<SecretString> {
    let text = text.into();
    (!text.is_empty()).then(|| SecretString::from(text))
}

/// Query parameters whose values are never shown.
const SECRET_PARAMETERS: &[&str] = &[
    "access_token",
    "token",
    "private_token",
    "password",
    "key",
    "secret",
    "signature",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "sig",
];

/// A URL as it may appear in errors and logs: without user info, and with the values of
/// credential-like query parameters replaced by [`MASK`]. Text that is not a URL is returned as is,
/// less anything before an `@` in its authority.
pub fn redact(url: &str) -> String {
    let Ok(mut parsed) = Url::parse(url) else {
        return match url.split_once("://") {
            Some((scheme, rest)) => match rest.split_once('@') {
                Some((_, host)) if !rest.split('/').next().unwrap_or("").is_empty() => {
                    format!("{scheme}://{host}")
                }
                _ => url.to_owned(),
            },
            None => url.to_owned(),
        };
    };
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let secret = SECRET_PARAMETERS
                    .iter()
                    .any(|s| k.eq_ignore_ascii_case(s) || k.to_ascii_lowercase().contains("token"));
                (
                    k.into_owned(),
                    if secret {
                        MASK.to_owned()
                    } else {
                        v.into_owned()
                    },
                )
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

/// Replaces secret values inside strings. Values shorter than four characters are only masked
/// where a whole string equals them, so that short secrets do not garble unrelated text.
pub fn mask_text(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        if out == *secret {
            return MASK.to_owned();
        }
        if secret.len() >= 4 {
            out = out.replace(secret.as_str(), MASK);
        }
    }
    out
}

/// Masks secret values ([`mask_text`]) in every string of `value`.
pub fn mask_strings(value: &mut serde_json::Value, secrets: &[String]) {
    use serde_json::Value;
    if secrets.is_empty() {
        return;
    }
    match value {
        Value::String(s) => *s = mask_text(s, secrets),
        Value::Array(items) => items.iter_mut().for_each(|v| mask_strings(v, secrets)),
        Value::Object(map) => map.values_mut().for_each(|v| mask_strings(v, secrets)),
        _ => {}
    }
}

/// Masks secret values in a message: like [`mask_text`], and a short secret also where it
/// stands quoted (`'abc'`, `"abc"`, `` `abc` ``), as error messages quote values.
pub fn mask_message(text: &str, secrets: &[String]) -> String {
    let mut out = mask_text(text, secrets);
    for secret in secrets.iter().filter(|s| !s.is_empty() && s.len() < 4) {
        for quote in ['\'', '"', '`'] {
            out = out.replace(
                &format!("{quote}{secret}{quote}"),
                &format!("{quote}{MASK}{quote}"),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_redacted_for_messages() {
        assert_eq!(
            redact("https://user:pa55@example.invalid/index.yaml"),
            "https://example.invalid/index.yaml"
        );
        assert_eq!(
            redact("https://example.invalid/x?access_token=abc&ref=main"),
            "https://example.invalid/x?access_token=******&ref=main"
        );
        assert_eq!(
            redact("https://example.invalid/x?X-Amz-Signature=abc"),
            "https://example.invalid/x?X-Amz-Signature=******"
        );
        assert_eq!(redact("not a url"), "not a url");
    }

    #[test]
    fn secrets_show_only_as_the_mask() {
        let token = secret("t0ken");
        assert_eq!(masked(token.as_ref()), Some(MASK));
        assert!(!format!("{token:?}").contains("t0ken"));
        assert!(secret("").is_none());
    }
}
