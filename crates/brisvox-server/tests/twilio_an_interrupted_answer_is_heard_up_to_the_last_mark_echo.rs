//! With Twilio, what the caller heard of an interrupted answer comes from the
//! `mark` echoes, not from what the server sent: Twilio plays the answer from
//! its own buffer and echoes a mark once the audio before it has played. The
//! real `brisvox serve` binary (energy VAD, mock providers, a long answer)
//! records two calls on /twilio, each talked over once a second of the answer
//! has arrived. A fake Twilio that echoes every mark at once gets an
//! interrupted bot turn holding the first words of the answer; one that never
//! echoes (its buffer never confirmed any audio) gets an interrupted bot turn
//! with no words. The recording's bot text is the engine's `Heard` cut, the
//! same cut the conversation keeps for the model's next request.

mod common;

use std::path::{Path, PathBuf};

use brisvox_testkit::{eventually_some_async, later};
use brisvox_transport::Carrier;
use common::binary::start_server_with;
use common::carrier::{FakeCarrier, Seen, speech, talk_until, test_format};

const ANSWER: &str = "Thank you for calling. Let me read you a long answer so that you have \
                      time to talk over me, one word after another, for several seconds at least.";

fn agent_file(recordings: &Path) -> String {
    format!(
        r#"greeting = ""
[vad]
detector = "energy"
min_silence_ms = 200
[turn]
analyzer = "always_complete"
[llm.mock]
first_token_ms = 50
answer = "{ANSWER}"
[recording]
directory = {recordings:?}
"#
    )
}

/// One call on /twilio: the prompt, the answer until a second of it has
/// arrived, then the prompt again over it until the server clears; marks
/// echoed at once or never.
async fn call(addr: std::net::SocketAddr, call_id: &str, echo_marks: bool) {
    let ws = common::connect_with(addr, "/twilio", &[])
        .await
        .unwrap_or_else(|status| panic!("upgrade refused with {status}"));
    let mut fake =
        FakeCarrier::with_ids(ws, Carrier::Twilio, test_format(Carrier::Twilio), call_id);
    fake.open(serde_json::json!({})).await;
    let prompt = speech(fake.emu.format());
    let mut seen = Seen::default();
    talk_until(&mut fake, &prompt, &mut seen, echo_marks, |s| {
        s.audible_ms >= 1000 && s.marks >= 5
    })
    .await;
    talk_until(&mut fake, &prompt, &mut seen, echo_marks, |s| s.clears > 0).await;
    let stop = fake.emu.stop().expect("a Twilio stream ends with stop");
    fake.send(stop).await;
    assert_eq!(fake.until_close().await, Some(1000), "{call_id}");
}

/// The text of `call_id`'s interrupted bot turn, from its recorded transcript.
async fn interrupted_bot_text(dir: &Path, call_id: &str) -> String {
    let prefix = format!("{call_id}-");
    let find = || -> Option<PathBuf> {
        std::fs::read_dir(dir)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                name.starts_with(&prefix) && name.ends_with(".json")
            })
    };
    let what = later(|| format!("no transcript of {call_id} in {}", dir.display()));
    let path = eventually_some_async(common::WAIT, what, || std::future::ready(find())).await;
    let transcript: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("transcript readable")).unwrap();
    let entries = transcript["entries"].as_array().expect("entries");
    let bot = entries
        .iter()
        .find(|e| e["role"] == "bot" && e["interrupted"] == true)
        .unwrap_or_else(|| panic!("{call_id}: no interrupted bot turn in {transcript}"));
    bot["text"].as_str().expect("a text").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_heard_part_of_an_interrupted_answer_follows_the_mark_echoes() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let recordings = dir.path().join("rec");
    std::fs::create_dir(&recordings).expect("recordings dir");
    let agent = dir.path().join("agent.toml");
    std::fs::write(&agent, agent_file(&recordings)).expect("agent file written");
    let server = start_server_with(&["--agent", agent.to_str().expect("UTF-8")], &[], None);
    call(server.addr, "echoing", true).await;
    call(server.addr, "silent", false).await;

    let echoed = interrupted_bot_text(&recordings, "echoing").await;
    let words = |t: &str| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    assert!(
        !echoed.is_empty() && words(ANSWER).starts_with(&words(&echoed)),
        "echoed marks: the first words of the answer were heard, got {echoed:?}"
    );
    assert!(
        words(&echoed).len() < words(ANSWER).len(),
        "cut: {echoed:?}"
    );
    let silent = interrupted_bot_text(&recordings, "silent").await;
    assert_eq!(
        silent, "",
        "no mark echoed: none of the audio sent counts as heard"
    );
}
