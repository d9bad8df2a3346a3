//! The built-in `transfer_call` tool (`[telephony.transfer]`): the model
//! hands a phone call over to one of the agent file's destinations, by name.
//!
//! The model never sees a number: its only argument is `destination`, one of
//! the configured names (a JSON Schema `enum`); anything else is an error
//! result it reads. A valid call queues the configured `say` and, once it has
//! played out ([`AfterSay`]), sends [`Control::Transfer`] into the call's
//! source; the engine ends the call ([`brisvox_engine::CallEnd::Transferred`])
//! and the carrier route transfers the phone call through the carrier's REST
//! API (`crate::ws_carrier`). Offered on carrier calls only: `/call` has no
//! phone call to hand over.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use brisvox_engine::{Control, ToolExecutor, ToolInvocation, ToolOutcome};
use brisvox_providers::{BoxFuture, ToolDefinition};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::after_say::AfterSay;
use crate::agent::TransferSettings;

/// The tool's name, as the model calls it.
pub const TRANSFER_TOOL: &str = "transfer_call";

/// Longest the transfer waits for its `say` to play out.
pub const TRANSFER_SAY_LIMIT: Duration = Duration::from_secs(20);

/// One call's `transfer_call`.
#[derive(Debug)]
pub struct TransferTool {
    settings: TransferSettings,
    definition: Arc<[ToolDefinition]>,
    after_say: Arc<AfterSay>,
    controls: mpsc::Sender<Control>,
    asked: AtomicBool,
}

impl TransferTool {
    /// The tool of a call, sending its controls to `controls`; add
    /// [`TransferTool::observer`] to the call's events.
    pub fn new(settings: &TransferSettings, controls: mpsc::Sender<Control>) -> Self {
        TransferTool {
            definition: Arc::from([definition(settings)]),
            settings: settings.clone(),
            after_say: AfterSay::new(controls.clone()),
            controls,
            asked: AtomicBool::new(false),
        }
    }

    /// What watches the call's events for the end of the `say`.
    pub fn observer(&self) -> Arc<AfterSay> {
        Arc::clone(&self.after_say)
    }

    /// The destination's target, or the error the model reads.
    fn target(&self, arguments: &str) -> Result<(String, String), String> {
        let args: Value =
            serde_json::from_str(arguments).map_err(|e| format!("arguments are not JSON: {e}"))?;
        let name = args
            .get("destination")
            .and_then(Value::as_str)
            .ok_or("missing destination")?;
        let dest = self.settings.destination(name).ok_or_else(|| {
            format!(
                "unknown destination {name:?}; one of: {}",
                self.names().join(", ")
            )
        })?;
        Ok((dest.name.clone(), dest.to.clone()))
    }

    fn names(&self) -> Vec<&str> {
        (self.settings.destinations.iter())
            .map(|d| d.name.as_str())
            .collect()
    }
}

/// The tool's definition: the description, then each destination.
fn definition(settings: &TransferSettings) -> ToolDefinition {
    let mut description = settings.description.clone();
    for d in &settings.destinations {
        description.push_str(&format!("\n- {}: {}", d.name, d.description));
    }
    let names: Vec<&str> = settings
        .destinations
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    ToolDefinition {
        name: Arc::from(TRANSFER_TOOL),
        description: Arc::from(description),
        parameters: Arc::new(json!({
            "type": "object",
            "properties": {
                "destination": {
                    "type": "string",
                    "enum": names,
                    "description": "Who to transfer the caller to.",
                },
            },
            "required": ["destination"],
        })),
    }
}

impl ToolExecutor for TransferTool {
    fn definitions(&self) -> Arc<[ToolDefinition]> {
        Arc::clone(&self.definition)
    }

    fn invoke(&self, call: ToolInvocation) -> BoxFuture<'static, ToolOutcome> {
        let target = if &*call.name == TRANSFER_TOOL {
            self.target(&call.arguments)
        } else {
            Err(format!("unknown tool {}", call.name))
        };
        let outcome = match target {
            Err(message) => Err(ToolOutcome::error(message)),
            Ok(_) if self.asked.swap(true, Ordering::Relaxed) => {
                Err(ToolOutcome::error("the call is already being transferred"))
            }
            Ok(target) => Ok(target),
        };
        let (after_say, controls) = (Arc::clone(&self.after_say), self.controls.clone());
        let say = self.settings.say.trim().to_owned();
        Box::pin(async move {
            let (name, to) = match outcome {
                Ok(target) => target,
                Err(error) => return error,
            };
            tracing::info!(destination = %name, "the model transfers the call");
            let transfer = Control::Transfer { to };
            if say.is_empty() {
                let _ = controls.send(transfer).await;
            } else {
                after_say.say_then(say, transfer, TRANSFER_SAY_LIMIT).await;
            }
            ToolOutcome::ok(json!({ "transferring_to": name }).to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::TransferDestination;
    use brisvox_core::Epoch;

    fn tool(say: &str) -> (TransferTool, mpsc::Receiver<Control>) {
        let settings = TransferSettings {
            say: say.into(),
            destinations: vec![TransferDestination {
                name: "sales".into(),
                to: "+15550100".into(),
                description: "orders".into(),
            }],
            ..TransferSettings::default()
        };
        let (tx, rx) = mpsc::channel(8);
        (TransferTool::new(&settings, tx), rx)
    }

    fn call(arguments: &str) -> ToolInvocation {
        ToolInvocation {
            call_id: Arc::from("c1"),
            name: Arc::from(TRANSFER_TOOL),
            arguments: Arc::from(arguments),
            epoch: Epoch(1),
        }
    }

    #[test]
    fn the_model_sees_names_never_numbers() {
        let (tool, _rx) = tool("");
        let def = &tool.definitions()[0];
        assert_eq!(&*def.name, "transfer_call");
        assert_eq!(
            def.parameters["properties"]["destination"]["enum"],
            json!(["sales"])
        );
        assert!(def.description.contains("- sales: orders"));
        assert!(
            !def.description.contains("5550100") && !def.parameters.to_string().contains("5550100")
        );
    }

    #[tokio::test]
    async fn only_a_configured_destination_is_dialled() {
        let (tool, mut rx) = tool("");
        for bad in [r#"{"destination":"+15550666"}"#, "{}", "nope"] {
            let out = tool.invoke(call(bad)).await;
            assert!(out.is_error, "{bad}: {out:?}");
        }
        assert!(rx.try_recv().is_err(), "nothing was transferred");
        let out = tool.invoke(call(r#"{"destination":"sales"}"#)).await;
        assert_eq!(out, ToolOutcome::ok(r#"{"transferring_to":"sales"}"#));
        assert_eq!(
            rx.try_recv().ok(),
            Some(Control::Transfer {
                to: "+15550100".into()
            })
        );
        let again = tool.invoke(call(r#"{"destination":"sales"}"#)).await;
        assert!(again.is_error, "one transfer per call");
    }

    #[tokio::test]
    async fn the_say_is_queued_before_the_transfer() {
        let (tool, mut rx) = tool("Please hold.");
        tool.invoke(call(r#"{"destination":"sales"}"#)).await;
        assert!(matches!(rx.try_recv(), Ok(Control::Say { text, .. }) if text == "Please hold."));
        assert!(rx.try_recv().is_err(), "the transfer waits for the say");
        assert!(tool.observer().waiting());
    }
}
