//! With `[recording]`, a call's recording holds exactly what the caller sent
//! (left channel) and what the bot played (right channel) up to the barge-in:
//! a handler plays numbered bot frames until the caller presses a key, then
//! clears. The WAV's left channel holds the caller's samples bit for bit (in
//! order, at their arrival times), its right channel the frames the client
//! received from the first on, cut at the clear with nothing after it, and the transcript has the caller's text and
//! the interrupted bot turn. A directory over its budget fails the recording,
//! not the call.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use brisvox_audio::wav::read_wav;
use brisvox_core::{AudioFrame, Epoch};
use brisvox_engine::{CallEnd, CallSink, CallSource, Control, EngineEvent, Inbound};
use brisvox_server::handler::{CallFuture, CallHandler, CallStart, RouteEdge};
use brisvox_testkit::{eventually_some, later};
use common::Seen;

/// Plays numbered 20 ms frames (16 kHz, never zero) from the caller's first
/// frame until a key press, then clears; says the caller said "hello".
struct TalksUntilKey;

/// Bot frames written at once when the bot starts: 200 ms ahead of play.
const BURST_FRAMES: usize = 10;

fn bot_frame(k: usize) -> Vec<i16> {
    (0..320).map(|i| (1000 + 7 * k + i % 50) as i16).collect()
}

impl CallHandler for TalksUntilKey {
    fn run_call(&self, _start: CallStart, mut edge: RouteEdge) -> CallFuture {
        Box::pin(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            let (mut playing, mut k) = (false, 0);
            loop {
                tokio::select! {
                    item = edge.source.recv() => match item {
                        Some(Inbound::Audio { .. }) if !playing && k == 0 => {
                            playing = true;
                            edge.events.emit(EngineEvent::Transcript { text: "hello".into(), is_final: true });
                            edge.events.emit(EngineEvent::BotSpeakingStarted { epoch: Epoch(1) });
                        }
                        Some(Inbound::Control { control: Control::Dtmf { .. }, .. }) => {
                            playing = false;
                            // As the engine does: the barge-in, then the clear.
                            edge.events.emit(EngineEvent::Interrupted { old: Epoch(1), new: Epoch(2) });
                            edge.sink.clear(Epoch(2)).await;
                            edge.events.emit(EngineEvent::BotSpeakingStopped { epoch: Epoch(1) });
                        }
                        Some(_) => {}
                        None => return Ok(CallEnd::Hangup),
                    },
                    _ = tick.tick(), if playing => {
                        // A burst of BURST_FRAMES first (written ahead of
                        // play, as a carrier buffers), then one per 20 ms.
                        let n = if k == 0 { BURST_FRAMES } else { 1 };
                        for _ in 0..n {
                            let frame = AudioFrame::from_samples(&bot_frame(k), 16_000).expect("a frame");
                            k += 1;
                            if edge.sink.send_audio(Epoch(1), frame).await.is_err() {
                                return Ok(CallEnd::TransportClosed);
                            }
                        }
                    }
                }
            }
        })
    }
}

fn caller_frame(n: usize) -> Vec<i16> {
    (0..320).map(|i| -2000 - (13 * n + i % 40) as i16).collect()
}

fn le_bytes(samples: &[i16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

/// The single finished recording in `dir`: (WAV bytes, transcript).
fn wait_recording(dir: &Path) -> (Vec<u8>, serde_json::Value) {
    let what = later(|| format!("no finished recording in {}", dir.display()));
    eventually_some(common::WAIT, what, || {
        let names: Vec<_> = std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        let wav = names
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "wav"))?;
        let json = names
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "json"))?;
        let transcript = serde_json::from_slice(&std::fs::read(json).ok()?).ok()?;
        Some((std::fs::read(wav).ok()?, transcript))
    })
}

#[tokio::test]
async fn the_wav_is_what_was_sent_and_played() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!("[recording]\ndirectory = {:?}\n", dir.path());
    let srv = common::server_with(&toml, Arc::new(TalksUntilKey)).await;
    let addr = srv.local_addr();
    let mut ws = common::connect(addr, "/call").await;
    common::send_text(&mut ws, common::START_PCM16).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");

    let mut sent = Vec::new();
    let mut received = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let mut n = 0;
    // Talk while the bot's first 25 frames arrive, press a key, go on until the clear.
    let (mut pressed, mut cleared) = (false, false);
    while !cleared {
        tokio::select! {
            _ = tick.tick(), if n < 60 => {
                let f = caller_frame(n);
                n += 1;
                sent.extend_from_slice(&f);
                common::send_binary(&mut ws, le_bytes(&f)).await;
                if !pressed && received.len() >= 25 * 320 {
                    pressed = true;
                    common::send_text(&mut ws, r#"{"type":"dtmf","digit":"1"}"#).await;
                }
            }
            seen = common::next(&mut ws) => match seen {
                Seen::Audio(bytes) => received.extend(
                    bytes.chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])),
                ),
                Seen::Event(ev) if ev["type"] == "clear" => cleared = true,
                Seen::Event(_) => {}
                Seen::Closed(c) => panic!("closed ({c:?})"),
            },
        }
    }
    common::send_text(&mut ws, r#"{"type":"end"}"#).await;
    let _ = common::until_close(&mut ws).await;

    let (wav, transcript) = wait_recording(dir.path());
    let wav = read_wav(&wav).unwrap();
    assert_eq!((wav.spec.channels, wav.spec.sample_rate_hz), (2, 16_000));
    let left: Vec<i16> = wav.samples.iter().step_by(2).copied().collect();
    let right: Vec<i16> = wav.samples.iter().skip(1).step_by(2).copied().collect();

    // Left: every caller sample, in order, bit for bit (a frame that arrived
    // late leaves a gap of silence before it; no sample sent is zero).
    let caller: Vec<i16> = left.iter().copied().filter(|&s| s != 0).collect();
    assert!(
        caller == sent,
        "the caller's audio, exactly ({} of {} samples)",
        caller.len(),
        sent.len()
    );

    // Right: what the bot played, from its start, cut at the barge-in: the
    // frames written ahead of play (the burst) and not yet heard are not in it.
    let bot: Vec<i16> = right.iter().copied().filter(|&s| s != 0).collect();
    assert!(
        bot.len() <= received.len() && bot[..] == received[..bot.len()],
        "the bot's track is what the client received, from its start"
    );
    let entries = transcript["entries"].as_array().unwrap();
    let turn = entries
        .iter()
        .find(|e| e["role"] == "bot" && e["turn"] == 1)
        .expect("the bot's turn");
    assert_eq!(turn["interrupted"], true, "{transcript}");
    let cut_at = turn["end_ms"].as_u64().unwrap() as usize * 16;
    let first_bot = right.iter().position(|&s| s != 0).unwrap();
    let last_bot = right.iter().rposition(|&s| s != 0).unwrap();
    assert!(
        last_bot < cut_at + 16,
        "nothing of the bot after the cut: sample {last_bot}, cut at {cut_at}"
    );
    assert!(
        bot.len() + 16 >= cut_at - first_bot,
        "everything before the cut is kept: {} samples, {} to the cut",
        bot.len(),
        cut_at - first_bot
    );
    assert!(
        bot.len() + (BURST_FRAMES - 2) * 320 <= received.len(),
        "the audio written ahead and never played is cut: {} of {} kept",
        bot.len(),
        received.len()
    );

    let entries = transcript["entries"].as_array().unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e["role"] == "user" && e["text"] == "hello")
    );
    assert!(
        entries
            .iter()
            .any(|e| e["role"] == "bot" && e["turn"] == 1 && e["interrupted"] == true),
        "{transcript}"
    );
    common::wait_metric(addr, "brisvox_recordings_total{result=\"written\"} 1").await;
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn a_full_directory_fails_the_recording_not_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[recording]\ndirectory = {:?}\nmax_directory_bytes = 1000\n",
        dir.path()
    );
    let srv = common::server_with(&toml, Arc::new(TalksUntilKey)).await;
    let addr = srv.local_addr();
    let mut ws = common::connect(addr, "/call").await;
    common::send_text(&mut ws, common::START_PCM16).await;
    for n in 0..10 {
        common::send_binary(&mut ws, le_bytes(&caller_frame(n))).await;
    }
    // The bot answers: the call works although its recording cannot be kept.
    while !matches!(common::next(&mut ws).await, Seen::Audio(_)) {}
    common::send_text(&mut ws, r#"{"type":"end"}"#).await;
    let (_, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1000));
    common::wait_metric(addr, "brisvox_recordings_total{result=\"failed\"} 1").await;
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing half-written"
    );
    srv.drain(Duration::from_millis(100)).await;
}
