//! The call that went unanswered (issue 17), end to end: `brisvox serve` with
//! no agent file (the local demo: local Whisper, the rules agent, the local
//! voice, Silero and Smart Turn, the greeting) over `/twilio` at 8 kHz mu-law.
//! The caller plays three Allison prompts, the first 0.6 s into the call
//! while the greeting plays, each followed by 4.5-5.5 s of silence, in real
//! time, and echoes the server's marks as Twilio does. Every prompt must be
//! answered with speech before the next one starts.
//!
//! Before the fix all three turns ended without text and without a word: the
//! recogniser's finals came after the 1 s final timeout, and nothing said so.
//!
//! Prints each answer's voice-to-voice time: from the end of the prompt's
//! speech (its JSON sidecar's `end_ms`) as sent on the 20 ms grid to the
//! arrival of the first `media` message with a sample louder than 1000.
//! `BRISVOX_TWILIO_CALLS=N` makes N calls one after the other (default 1).
//!
//! Needs the models and the Whisper model (scripts/fetch-models.sh
//! --whisper): skipped with a message when they are missing, failed when `CI`
//! is set. Takes about 25 s per call.

mod common;

use std::time::Duration;

use common::Seen;
use common::binary::{
    fixture, models_present, start_server, twilio_loud, twilio_media, twilio_start, twilio_stop,
};
use futures_util::SinkExt as _;
use tokio::time::{Instant, MissedTickBehavior};

const PROMPTS: [(&str, u32); 3] = [
    ("phone_vm_nobodyavail_8k", 5_000),
    ("phone_tt_weasels_8k", 4_500),
    ("phone_check_number_dial_again_8k", 5_500),
];

/// 20 ms frames at 8 kHz.
const FRAME: usize = 160;

/// Where the prompt's speech ends, in ms from its start (the fixture's sidecar).
fn speech_end_ms(name: &str) -> f64 {
    let path = format!("{}/../../fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("sidecar")).expect("JSON");
    json["utterances"][0]["end_ms"].as_f64().expect("end_ms")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_of_three_prompts_over_twilio_is_answered() {
    if !models_present(true) {
        return;
    }
    let calls: usize = std::env::var("BRISVOX_TWILIO_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let server = start_server(&[]);
    println!("| call | prompt | V2V ms |");
    println!("|---|---|---|");
    for call in 0..calls {
        for (i, v2v) in one_call(server.addr).await.into_iter().enumerate() {
            println!("| {} | {} | {v2v:.0} |", call + 1, PROMPTS[i].0);
        }
    }
}

/// One call; returns each prompt's voice-to-voice time in ms.
async fn one_call(addr: std::net::SocketAddr) -> Vec<f64> {
    let mut ws = common::connect(addr, "/twilio").await;
    let sid = "MZ00000000000000000000000000000017";
    for text in twilio_start(sid) {
        common::send_text(&mut ws, &text).await;
    }
    // The caller's audio: 0.6 s of silence, then each prompt and its silence.
    let mut audio = vec![0i16; 8 * 600];
    let mut windows = Vec::new(); // (frame after the prompt's end, frame of the next prompt)
    let mut speech_ends = Vec::new(); // ms from the call's start
    for (name, silence_ms) in PROMPTS {
        speech_ends.push(audio.len() as f64 / 8.0 + speech_end_ms(name));
        audio.extend(fixture(name));
        let end = audio.len().div_ceil(FRAME);
        audio.extend(std::iter::repeat_n(0, 8 * silence_ms as usize));
        windows.push((end, audio.len().div_ceil(FRAME)));
    }
    let frames: Vec<&[i16]> = audio.chunks(FRAME).collect();
    let mut loud = vec![0usize; PROMPTS.len()];
    let mut first_loud: Vec<Option<f64>> = vec![None; PROMPTS.len()];
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    tick.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(60);
    let mut sent = 0;
    while sent < frames.len() {
        assert!(Instant::now() < deadline, "the call took too long");
        tokio::select! {
            _ = tick.tick() => {
                ws.send(twilio_media(sid, frames[sent], sent)).await.expect("send audio");
                sent += 1;
            }
            m = common::next(&mut ws) => {
                let Seen::Event(ev) = m else { panic!("Twilio gets JSON text only") };
                match ev["event"].as_str() {
                    Some("media") if twilio_loud(&ev) => {
                        if let Some(i) = windows.iter().position(|&(a, b)| (a..b).contains(&sent)) {
                            loud[i] += 1;
                            let at = started.elapsed().as_secs_f64() * 1000.0;
                            first_loud[i].get_or_insert(at - speech_ends[i]);
                        }
                    }
                    // Twilio echoes a mark when the audio before it has played.
                    Some("mark") => {
                        let echo = serde_json::json!({"event": "mark", "sequenceNumber": "0",
                            "streamSid": sid, "mark": {"name": ev["mark"]["name"]}});
                        common::send_text(&mut ws, &echo.to_string()).await;
                    }
                    _ => {}
                }
            }
        }
    }
    for (i, (name, _)) in PROMPTS.iter().enumerate() {
        assert!(
            loud[i] >= 10,
            "prompt {} ({name}) got {} loud answer frames (of {loud:?})",
            i + 1,
            loud[i]
        );
    }
    common::send_text(&mut ws, &twilio_stop(sid)).await;
    let (_, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1000));
    first_loud
        .into_iter()
        .map(|v| v.unwrap_or(f64::NAN))
        .collect()
}
