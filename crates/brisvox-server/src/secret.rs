//! Secrets in the agent file: only references to environment variables.
//!
//! A secret setting (an API key, an auth token) is written `"${NAME}"` in the
//! agent file. A literal value is refused, so that keys never sit in a file that
//! may be committed. [`SecretSetting::resolve`] reads the variable; the value is
//! kept in a [`Secret`], whose `Debug` and `Display` print `<redacted>`, and the
//! setting serialises as the reference, never the value.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

/// A secret value. Its `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the one place that sends it to the vendor.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// What went wrong with a secret setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The setting is not a `${NAME}` reference.
    #[error(
        "{key} must reference an environment variable, like \"${{MY_API_KEY}}\"; literal secrets are not allowed in the agent file"
    )]
    Literal {
        /// The setting's key (`stt.deepgram.api_key`).
        key: String,
    },
    /// The referenced variable is not set (or empty).
    #[error("{key} references the environment variable {var}, which is not set")]
    MissingEnvVar {
        /// The setting's key.
        key: String,
        /// The variable's name.
        var: String,
    },
}

/// A secret setting: the `${NAME}` reference from the file and, once resolved,
/// the value.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub struct SecretSetting {
    raw: String,
    value: Option<Secret>,
}

impl From<String> for SecretSetting {
    fn from(raw: String) -> Self {
        Self { raw, value: None }
    }
}

impl SecretSetting {
    /// A setting referencing the variable `var`.
    pub fn from_env_var(var: &str) -> Self {
        Self::from(format!("${{{var}}}"))
    }

    /// The referenced variable's name, if the setting is a well-formed reference.
    pub fn env_var(&self) -> Option<&str> {
        let name = self.raw.strip_prefix("${")?.strip_suffix('}')?;
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        (first_ok && rest_ok).then_some(name)
    }

    /// Reads the variable through `env`; `key` names the setting in errors.
    pub fn resolve(
        &mut self,
        key: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), SecretError> {
        let var = self.env_var().ok_or_else(|| SecretError::Literal {
            key: key.to_owned(),
        })?;
        match env(var) {
            Some(v) if !v.is_empty() => {
                self.value = Some(Secret::new(v));
                Ok(())
            }
            _ => Err(SecretError::MissingEnvVar {
                key: key.to_owned(),
                var: var.to_owned(),
            }),
        }
    }

    /// The value, once resolved.
    pub fn secret(&self) -> Option<&Secret> {
        self.value.as_ref()
    }

    /// How the setting is shown: the reference and whether it was resolved.
    pub fn redacted(&self) -> String {
        match (&self.value, self.env_var()) {
            (Some(_), Some(var)) => format!("<redacted, from ${var}>"),
            (None, Some(var)) => format!("<not read: provider not selected, from ${var}>"),
            _ => "<redacted>".to_owned(),
        }
    }
}

impl fmt::Debug for SecretSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl Serialize for SecretSetting {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.redacted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "KEY").then(|| "sk-live-123".to_owned())
    }

    #[test]
    fn references_resolve_and_never_print() {
        let mut s = SecretSetting::from("${KEY}".to_owned());
        s.resolve("stt.deepgram.api_key", &env).unwrap();
        assert_eq!(s.secret().unwrap().expose(), "sk-live-123");
        for shown in [
            format!("{s:?}"),
            format!("{:?}", s.secret()),
            s.secret().unwrap().to_string(),
        ] {
            assert!(!shown.contains("sk-live"), "{shown}");
        }
    }

    #[test]
    fn literals_and_missing_vars_are_errors_naming_the_key() {
        for raw in ["sk-123", "$KEY", "${}", "${1A}", "${KEY"] {
            let err = SecretSetting::from(raw.to_owned())
                .resolve("llm.openai_compatible.api_key", &env)
                .unwrap_err();
            assert!(
                matches!(err, SecretError::Literal { ref key } if key == "llm.openai_compatible.api_key"),
                "{raw}"
            );
        }
        let err = SecretSetting::from_env_var("NOPE")
            .resolve("tts.cartesia.api_key", &env)
            .unwrap_err();
        assert_eq!(
            err,
            SecretError::MissingEnvVar {
                key: "tts.cartesia.api_key".into(),
                var: "NOPE".into()
            }
        );
    }
}
