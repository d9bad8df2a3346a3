//! `say` on /call goes through the engine and is heard: the mock TTS speaks
//! it (60 ms of audio per character) between `bot_speaking_started` and
//! `bot_speaking_stopped`; `interrupt: true` cuts the bot at once (`clear`,
//! `bot_speaking_stopped` interrupted) and speaks; `interrupt: false` waits for
//! the current answer; an empty say gets an `error` and the call goes on.
//! Each spoken say is announced first by its `bot_text`s; the cut one's
//! `bot_heard` says what of it was heard.

mod common;

use std::time::Duration;

use common::{send_text, until_event};

/// Audio frames of 20 ms the mock TTS speaks for `text` (60 ms per char).
fn frames_for(text: &str) -> usize {
    text.chars().count() * 3
}

fn say(text: &str, interrupt: bool) -> String {
    serde_json::json!({"type": "say", "text": text, "interrupt": interrupt}).to_string()
}

async fn started_call() -> (brisvox_server::serve::RunningServer, common::Ws) {
    let srv = common::engine_server("", "", None).await;
    let mut ws = common::connect(srv.local_addr(), "/call").await;
    send_text(&mut ws, common::START_PCM16).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
    (srv, ws)
}

/// The events before a `bot_speaking_started` are the said text's
/// `bot_text`s (a chunk at a time) and nothing else.
fn assert_bot_text(events: &[serde_json::Value], text: &str) {
    let (last, before) = events.split_last().expect("events");
    assert_eq!(last["type"], "bot_speaking_started", "{events:?}");
    assert!(before.iter().all(|e| e["type"] == "bot_text"), "{events:?}");
    let words: Vec<&str> = before.iter().filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(words.join(" "), text, "{events:?}");
}

fn near(got: usize, want: usize) -> bool {
    got + 3 >= want && got <= want + 3
}

#[tokio::test]
async fn a_say_is_spoken_by_the_engine() {
    let (srv, mut ws) = started_call().await;
    let text = "Hello there, this is a test.";
    send_text(&mut ws, &say(text, false)).await;
    let (events, _) = until_event(&mut ws, "bot_speaking_started").await;
    assert_bot_text(&events, text);
    let (events, audible) = until_event(&mut ws, "bot_speaking_stopped").await;
    assert_eq!(events.last().unwrap()["interrupted"], false, "{events:?}");
    assert!(near(audible, frames_for(text)), "{audible} frames of audio");
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn an_interrupting_say_cuts_the_bot_and_a_queued_one_waits() {
    let (srv, mut ws) = started_call().await;
    let long = "This is a long announcement that goes on for a good while before it ends.";
    send_text(&mut ws, &say(long, false)).await;
    until_event(&mut ws, "bot_speaking_started").await;
    let now = "Sorry, one moment.";
    send_text(&mut ws, &say(now, true)).await;
    let after = "Thanks for waiting.";
    send_text(&mut ws, &say(after, false)).await;
    // The cut: clear and an interrupted stop, in either order.
    // The interrupting say's bot_text and the cut's bot_heard may overtake
    // them (another path).
    let mut heard = Vec::new();
    let mut cut = Vec::new();
    let mut early = Vec::new();
    while cut.len() < 2 {
        let ev = common::next_event(&mut ws).await;
        if ev["type"] == "bot_text" || ev["type"] == "bot_heard" {
            early.push(ev);
            continue;
        }
        cut.push(ev["type"].as_str().unwrap().to_owned());
        if ev["type"] == "bot_speaking_stopped" {
            assert_eq!(ev["interrupted"], true, "{ev}");
        }
    }
    cut.sort();
    assert_eq!(cut, ["bot_speaking_stopped", "clear"]);
    // Then the interrupting say, whole; then the queued one after it.
    for text in [now, after] {
        let (events, _) = until_event(&mut ws, "bot_speaking_started").await;
        let events: Vec<_> = std::mem::take(&mut early)
            .into_iter()
            .chain(events)
            .collect();
        let (cut, events): (Vec<_>, Vec<_>) =
            events.into_iter().partition(|e| e["type"] == "bot_heard");
        heard.extend(cut);
        assert_bot_text(&events, text);
        let (events, audible) = until_event(&mut ws, "bot_speaking_stopped").await;
        assert_eq!(events.last().unwrap()["interrupted"], false, "{events:?}");
        assert!(near(audible, frames_for(text)), "{text}: {audible} frames");
    }
    // What the caller heard of the cut announcement: its beginning (the mock
    // voice has no word timings: in proportion to the audio played).
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert_eq!(heard[0]["sent"], long, "{heard:?}");
    let heard_text = heard[0]["heard"].as_str().expect("heard");
    assert!(
        long.starts_with(heard_text) && heard_text.len() < long.len(),
        "{heard:?}"
    );
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn an_empty_say_is_refused_with_an_error_and_the_call_goes_on() {
    let (srv, mut ws) = started_call().await;
    send_text(&mut ws, &say("   ", false)).await;
    let ev = common::next_event(&mut ws).await;
    assert_eq!(
        (ev["type"].as_str(), ev["code"].as_str()),
        (Some("error"), Some("invalid_field"))
    );
    send_text(&mut ws, &say("Still here.", false)).await;
    let (events, _) = until_event(&mut ws, "bot_speaking_started").await;
    assert_bot_text(&events, "Still here.");
    srv.drain(Duration::from_millis(100)).await;
}
