//! `[telephony.transfer]`: the built-in `transfer_call` tool, offered to the
//! model on phone calls. The model picks one of the configured destinations
//! by name; it never sees or dials a number of its own.

use brisvox_transport::carrier::control::TransferTarget;
use serde::{Deserialize, Serialize};

use super::AgentError;

/// Most destinations one agent may offer.
pub const MAX_TRANSFER_DESTINATIONS: usize = 32;

/// `[telephony.transfer]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TransferSettings {
    /// Said before the call is handed over (queued after the bot's answer,
    /// the transfer happens when it has played out); empty: transfer at once.
    pub say: String,
    /// The description of the tool, for the model (the destinations are
    /// listed after it).
    pub description: String,
    /// Where the model may transfer the call.
    pub destinations: Vec<TransferDestination>,
}

impl Default for TransferSettings {
    fn default() -> Self {
        Self {
            say: "Please hold while I transfer your call.".to_owned(),
            description: "Transfer the caller to a person. Call it when the caller asks for \
                          a human, or for one of the destinations below."
                .to_owned(),
            destinations: Vec::new(),
        }
    }
}

/// One destination of `[telephony.transfer]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferDestination {
    /// What the model calls it (`sales`): lower-case letters, digits, `_`, `-`.
    pub name: String,
    /// The E.164 number (`+15550100`) or SIP URI (`sip:desk@pbx.example.com`).
    pub to: String,
    /// When to pick it, for the model.
    #[serde(default)]
    pub description: String,
}

impl TransferSettings {
    /// The destination the model named.
    pub fn destination(&self, name: &str) -> Option<&TransferDestination> {
        self.destinations.iter().find(|d| d.name == name)
    }

    pub(super) fn check(&self) -> Result<(), AgentError> {
        let key = "telephony.transfer.destinations";
        if self.destinations.is_empty() || self.destinations.len() > MAX_TRANSFER_DESTINATIONS {
            return Err(AgentError::invalid(
                key,
                self.destinations.len(),
                "1 to 32 destinations, each { name, to, description }",
            ));
        }
        for (i, d) in self.destinations.iter().enumerate() {
            let named = !d.name.is_empty()
                && d.name.len() <= 64
                && d.name.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                });
            if !named {
                return Err(AgentError::invalid(
                    &format!("{key}[{i}].name"),
                    &d.name,
                    "1 to 64 of a-z, 0-9, _ and -",
                ));
            }
            if self.destinations[..i].iter().any(|e| e.name == d.name) {
                return Err(AgentError::invalid(
                    &format!("{key}[{i}].name"),
                    &d.name,
                    "a name no other destination has",
                ));
            }
            if TransferTarget::parse(&d.to).is_err() {
                return Err(AgentError::invalid(
                    &format!("{key}[{i}].to"),
                    &d.to,
                    "an E.164 number (+15550100) or a sip: URI",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(destinations: Vec<TransferDestination>) -> TransferSettings {
        TransferSettings {
            destinations,
            ..TransferSettings::default()
        }
    }

    fn dest(name: &str, to: &str) -> TransferDestination {
        TransferDestination {
            name: name.into(),
            to: to.into(),
            description: String::new(),
        }
    }

    #[test]
    fn destinations_are_checked_naming_the_key() {
        assert!(
            with(vec![
                dest("sales", "+15550100"),
                dest("desk", "sip:d@pbx.example")
            ])
            .check()
            .is_ok()
        );
        let err = |s: TransferSettings| s.check().unwrap_err().to_string();
        assert!(err(with(vec![])).contains("telephony.transfer.destinations"));
        let bad_to = err(with(vec![dest("sales", "call me")]));
        assert!(
            bad_to.contains("telephony.transfer.destinations[0].to"),
            "{bad_to}"
        );
        let bad_name = err(with(vec![dest("Sales Team", "+15550100")]));
        assert!(bad_name.contains("destinations[0].name"), "{bad_name}");
        let twice = err(with(vec![dest("a", "+15550100"), dest("a", "+15550101")]));
        assert!(twice.contains("destinations[1].name"), "{twice}");
    }
}
