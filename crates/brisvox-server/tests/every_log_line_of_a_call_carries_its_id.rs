//! Every log line written while a call runs carries the call's id, whichever
//! task writes it (the route's reader and writer, the engine's stages, the
//! providers' sessions): the real binary, JSON logs at debug level, one call
//! over `/call` that hears a greeting, sends a `say`, then sends a message
//! the protocol refuses (a `say` without text), which ends the call.

mod common;

use common::{Seen, send_text};

const CALL_ID: &str = "log-call-7";

#[tokio::test]
async fn each_line_of_the_call_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = common::Binary::start(
        dir.path(),
        "greeting = \"Hello there.\"\n\
         [stt]\nprovider = \"mock\"\n[llm]\nprovider = \"mock\"\n[tts]\nprovider = \"mock\"\n\
         [vad]\ndetector = \"energy\"\n[turn]\nanalyzer = \"always_complete\"\n\
         [server]\ndrain_admit_s = 0\n",
        &[(
            "RUST_LOG",
            "brisvox=debug,brisvox_server=debug,brisvox_engine=debug,brisvox_providers=debug",
        )],
    );
    let addr = server.addr;
    let mut ws = common::connect(addr, "/call").await;
    let start = common::START_PCM16.replace("\"t1\"", &format!("\"{CALL_ID}\""));
    assert!(start.contains(CALL_ID), "the start message names the call");
    send_text(&mut ws, &start).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
    // The greeting is spoken: the LLM-free path through TTS and the pacer.
    wait_for_event(&mut ws, "bot_speaking_stopped").await;
    send_text(&mut ws, r#"{"type":"say","text":"One more thing."}"#).await;
    wait_for_event(&mut ws, "bot_speaking_stopped").await;
    send_text(&mut ws, r#"{"type":"say"}"#).await;
    let (_, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1002));
    // The close reaches the client before the server logs "call finished":
    // wait for that line before SIGTERM, or the drain's lines (which belong
    // to no call) fall inside the call's lines.
    let mut lines = Vec::new();
    while !lines
        .iter()
        .any(|v: &serde_json::Value| v["fields"]["message"] == "call finished")
    {
        let line = server
            .lines
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the server logs the call's end");
        lines.push(serde_json::from_str(&line).expect("JSON log lines"));
    }
    assert!(server.terminate(), "a clean exit");
    lines.extend(
        server
            .lines
            .try_iter()
            .map(|l| serde_json::from_str::<serde_json::Value>(&l).expect("JSON log lines")),
    );
    let first = lines
        .iter()
        .position(|v| v["fields"]["message"] == "call started")
        .expect("the call started");
    let last = lines
        .iter()
        .rposition(|v| v["fields"]["message"] == "call finished")
        .expect("the call finished");
    let during = &lines[first..=last];
    assert!(
        during.len() >= 3,
        "expected lines from the call: {during:#?}"
    );
    for v in during {
        assert!(names_the_call(v), "a line of the call without its id: {v}");
    }
    assert!(
        during
            .iter()
            .any(|v| v["fields"]["message"] == "call ended by bad input"),
        "the reader's line is among them: {during:#?}"
    );
}

/// The id as a field of the line, or of the span it was written in.
fn names_the_call(v: &serde_json::Value) -> bool {
    let in_fields = v["fields"]["call_id"] == CALL_ID;
    let in_span = v["span"]["call_id"] == CALL_ID;
    let in_spans = v["spans"]
        .as_array()
        .is_some_and(|s| s.iter().any(|s| s["call_id"] == CALL_ID));
    in_fields || in_span || in_spans
}

async fn wait_for_event(ws: &mut common::Ws, kind: &str) {
    loop {
        match common::next(ws).await {
            Seen::Event(ev) if ev["type"] == kind => return,
            Seen::Closed(code) => panic!("closed ({code:?}) before {kind}"),
            _ => {}
        }
    }
}
