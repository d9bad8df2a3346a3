//! The real `brisvox serve` binary says at start which kernel runs Smart
//! Turn's attention softmax (docs/OPERATIONS.md names both lines): brisvox's,
//! with the number of nodes, when the load-time check found it equal to ONNX
//! Runtime's on this CPU, with the number of elementwise chains run as lookup tables
//! (a table differing from ONNX Runtime's operators on a probe input is a
//! warning with its reason and 0 chains); ONNX Runtime's, with the reason, when not.
//!
//! Needs the model files: skipped with a message when they are missing, failed
//! when `CI` is set.

mod common;

use common::binary::{Logs, models_present, start_server_with};

const ON_OURS: &str =
    "Smart Turn attention softmax on brisvox's kernel (ONNX Runtime's output, bit for bit)";
const LEFT: &str =
    "Smart Turn attention softmax left on ONNX Runtime's kernel (same output, more CPU)";
const LOOKUP_LEFT: &str =
    "Smart Turn elementwise chains left on ONNX Runtime's operators (same output, more CPU)";

#[test]
fn the_start_up_log_names_the_softmax_kernel() {
    if !models_present(false) {
        return;
    }
    let agent = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(
        agent.path(),
        "# mock STT, LLM and TTS; Silero VAD and Smart Turn\n",
    )
    .expect("agent file");
    let logs = Logs::default();
    let path = agent.path().to_str().expect("utf-8 path");
    let _server = start_server_with(&["--agent", path], &[], Some(Logs::clone(&logs)));
    let logs = logs.lock().expect("log lock");
    let line = logs
        .iter()
        .find(|v| v["fields"]["message"] == ON_OURS || v["fields"]["message"] == LEFT)
        .unwrap_or_else(|| panic!("no softmax line among {} start-up lines", logs.len()));
    match brisvox_models::smart_turn::SmartTurn::exact_softmax_check() {
        Ok(()) => {
            assert_eq!(line["fields"]["message"], ON_OURS, "{line}");
            assert_eq!(line["fields"]["exact_softmax_nodes"], 4, "{line}");
            assert_eq!(line["fields"]["lookup_chains"], 19, "{line}");
            assert_eq!(line["fields"]["signed_operands"], 8, "{line}");
            assert!(
                !logs.iter().any(|v| v["fields"]["message"] == LOOKUP_LEFT),
                "the tables were refused on this machine"
            );
        }
        Err(why) => {
            assert_eq!(line["fields"]["message"], LEFT, "{line}");
            assert_eq!(line["fields"]["reason"], why.as_str(), "{line}");
        }
    }
}
