//! `[chaos]` faults a seeded share of calls while the others run clean (#19
//! item 4): eight calls at once over /call, share 0.5 and a fixed seed, a
//! refused LLM request on each faulted call's first turn. The calls the draw
//! picks hear the apology, end their turn and the call cleanly; the others
//! hear the mock's answer; `/metrics` counts one LLM failure per faulted call.
//! (Real server and engine over real sockets, mock providers, energy VAD.)

mod common;

use std::time::Duration;

use brisvox_server::chaos::picks;
use common::Seen;

const CALLS: usize = 8;
const SEED: u64 = 7;
const APOLOGY: &str = "Sorry, I lost my train of thought.";
const ANSWER: &str = "Here is the clean answer.";

/// 20 ms of a loud 16 kHz tone (speech to the energy VAD), PCM16 LE.
fn tone_frame() -> Vec<u8> {
    (0..320)
        .map(|i| if (i / 20) % 2 == 0 { 8000i16 } else { -8000 })
        .flat_map(i16::to_le_bytes)
        .collect()
}

/// One call: a caller turn, then silence until the bot's voice stops; the
/// `bot_text`s of the turn (a sentence or clause each) and the `end` reason and close code.
async fn call(addr: std::net::SocketAddr, id: String) -> (Vec<String>, String, Option<u16>) {
    let mut ws = common::connect(addr, "/call").await;
    let start = format!(
        r#"{{"type":"start","protocol_version":1,"codec":"pcm16","sample_rate":16000,"call_id":"{id}"}}"#
    );
    common::send_text(&mut ws, &start).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
    for _ in 0..40 {
        common::send_binary(&mut ws, tone_frame()).await;
    }
    let silence = vec![0u8; 640];
    let mut texts = Vec::new();
    loop {
        common::send_binary(&mut ws, silence.clone()).await;
        match tokio::time::timeout(Duration::from_millis(20), common::next(&mut ws)).await {
            Ok(Seen::Event(e)) if e["type"] == "bot_text" => {
                texts.push(e["text"].as_str().unwrap().to_owned());
            }
            Ok(Seen::Event(e)) if e["type"] == "bot_speaking_stopped" => break,
            Ok(Seen::Closed(c)) => panic!("{id} closed {c:?}"),
            Ok(_) | Err(_) => {}
        }
    }
    common::send_text(&mut ws, r#"{"type":"end"}"#).await;
    let (events, code) = common::until_close(&mut ws).await;
    let reason = events.last().map(|e| e["reason"].to_string());
    (texts, reason.unwrap_or_default(), code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn picked_calls_apologise_and_the_others_answer() {
    let top = format!("apology = \"{APOLOGY}\"");
    let sections = format!(
        "[llm.mock]\nanswer = \"{ANSWER}\"\n[chaos]\nshare = 0.5\nseed = {SEED}\n[chaos.llm]\nfault = \"refuse\"\nstatus = 503\n"
    );
    let srv = common::engine_server(&top, &sections, None).await;
    let addr = srv.local_addr();
    let ids: Vec<String> = (0..CALLS).map(|i| format!("chaos-{i}")).collect();
    let faulted = ids.iter().filter(|id| picks(SEED, 0.5, id)).count();
    assert!(
        (1..CALLS).contains(&faulted),
        "the seed picks some calls, not all: {faulted}"
    );
    let tasks: Vec<_> = ids
        .iter()
        .map(|id| tokio::spawn(call(addr, id.clone())))
        .collect();
    for (id, task) in ids.iter().zip(tasks) {
        let (texts, reason, code) = task.await.unwrap();
        let want = if picks(SEED, 0.5, id) {
            APOLOGY
        } else {
            ANSWER
        };
        assert_eq!(texts.join(" "), want, "{id}: {texts:?}");
        assert_eq!(
            (reason.as_str(), code),
            ("\"client_end\"", Some(1000)),
            "{id}"
        );
    }
    let body = common::wait_metric(
        addr,
        &format!("brisvox_calls_total{{outcome=\"client_end\"}} {CALLS}"),
    )
    .await;
    let failures = format!(
        "brisvox_provider_errors_total{{kind=\"server\",stage=\"llm_before_first_token\"}} {faulted}"
    );
    assert!(body.contains(&failures), "{failures} missing in\n{body}");
    srv.drain(Duration::from_millis(100)).await;
}
