//! An echo-after-silence bot for the tests: speaks the brisvox protocol v1 on
//! 127.0.0.1, ends a turn after 200 ms of silence following speech and answers it
//! 300 ms later with 200 ms of tone; and a synthetic fixture whose two
//! utterances end on frame edges, so the true V2V is 500 ms when the bot is
//! punctual. The bot's `turn_metrics` carries the delay it really took
//! (`response_latency_ms`: from the frame that ended the turn to its first
//! tone frame handed to the socket), so a test on a loaded machine can tell
//! the bot's lateness from the client's measurement error.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

pub const RATE: u32 = 16_000;
pub const FRAME: usize = 320;
pub const ENDPOINT_FRAMES: u32 = 10; // 200 ms of silence ends a turn
pub const REPLY_DELAY_MS: u64 = 300;
pub const EXPECTED_MS: f64 = 500.0;

pub fn write_fixture(dir: &PathBuf) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let wav = dir.join("tone_two_turns.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: RATE,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(&wav, spec).unwrap();
    // ms: silence 0-500, tone 500-1500, silence 1500-4000, tone 4000-4800, silence to 6800.
    for i in 0..(RATE as usize * 68 / 10) {
        let t_ms = i as f64 * 1000.0 / RATE as f64;
        let speech = (500.0..1500.0).contains(&t_ms) || (4000.0..4800.0).contains(&t_ms);
        let s = if speech {
            (8000.0 * (t_ms * 0.44 * std::f64::consts::TAU).sin()) as i16
        } else {
            0
        };
        w.write_sample(s).unwrap();
    }
    w.finalize().unwrap();
    let sidecar = r#"{"name":"tone_two_turns","sample_rate_hz":16000,"duration_ms":6800.0,
      "utterances":[{"transcript":"a","language":"en","start_ms":500.0,"end_ms":1500.0},
                    {"transcript":"b","language":"en","start_ms":4000.0,"end_ms":4800.0}]}"#;
    std::fs::write(dir.join("tone_two_turns.json"), sidecar).unwrap();
    wav
}

pub fn peak(b: &[u8]) -> i32 {
    b.chunks_exact(2)
        .map(|c| i32::from(i16::from_le_bytes([c[0], c[1]])).abs())
        .max()
        .unwrap_or(0)
}

/// Echo-after-silence bot: one connection, speaks the brisvox protocol v1.
pub async fn bot(stream: tokio::net::TcpStream) {
    let ws = tokio_tungstenite::accept_async(stream).await.unwrap();
    let (mut tx, mut rx) = ws.split();
    let (out_tx, mut out_rx) = tokio::sync::mpsc::channel::<Message>(64);
    let writer = tokio::spawn(async move {
        while let Some(m) = out_rx.recv().await {
            if tx.send(m).await.is_err() {
                break;
            }
        }
    });
    let (mut in_speech, mut silent, mut turn) = (false, 0u32, 0u32);
    while let Some(Ok(msg)) = rx.next().await {
        match msg {
            Message::Text(t) if t.contains("\"start\"") => {
                out_tx.send(Message::text(r#"{"type":"started","protocol_version":1,"call_id":"t","codec":"pcm16","sample_rate":16000,"providers":{"stt":"mock","llm":"mock","tts":"mock"},"mock":true}"#)).await.unwrap();
            }
            Message::Text(t) if t.contains("\"end\"") => {
                let _ = out_tx
                    .send(Message::text(r#"{"type":"end","reason":"client_end"}"#))
                    .await;
                let _ = out_tx.send(Message::Close(None)).await;
                break;
            }
            Message::Binary(b) => {
                assert_eq!(b.len(), FRAME * 2, "the client sends 20 ms frames");
                if peak(&b) >= 1000 {
                    in_speech = true;
                    silent = 0;
                } else if in_speech {
                    silent += 1;
                    if silent == ENDPOINT_FRAMES {
                        in_speech = false;
                        turn += 1;
                        let out = out_tx.clone();
                        let ended = tokio::time::Instant::now();
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_millis(REPLY_DELAY_MS)).await;
                            let tone: Vec<u8> = (0..FRAME)
                                .flat_map(|i| (((i % 16) as i16 - 8) * 1000).to_le_bytes())
                                .collect();
                            let mut took = None;
                            for _ in 0..10 {
                                let _ = out.send(Message::binary(tone.clone())).await;
                                took.get_or_insert_with(|| ended.elapsed());
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                            let took_ms = took.unwrap_or_default().as_secs_f64() * 1000.0;
                            let m = format!(
                                r#"{{"type":"turn_metrics","turn":{turn},"response_latency_ms":{took_ms}}}"#
                            );
                            let _ = out.send(Message::text(m)).await;
                        });
                    }
                }
            }
            _ => {}
        }
    }
    drop(out_tx);
    let _ = writer.await;
}

/// Starts the bot on 127.0.0.1:0 on `rt`; returns its port.
pub fn start_bot(rt: &tokio::runtime::Runtime) -> u16 {
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let port = listener.local_addr().unwrap().port();
    rt.spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(bot(s));
        }
    });
    port
}

/// A test's scratch folder with the fixture in it, and the bot running on a
/// runtime of its own (one worker) for as long as this lives.
pub struct BotRun {
    pub dir: PathBuf,
    pub wav: PathBuf,
    pub port: u16,
    rt: tokio::runtime::Runtime,
}

/// Writes the fixture under a folder named for `test` and starts the bot.
pub fn bot_run(test: &str) -> BotRun {
    let dir = std::env::temp_dir().join(format!("brisvox-bench-{test}-{}", std::process::id()));
    let wav = write_fixture(&dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let port = start_bot(&rt);
    BotRun { dir, wav, port, rt }
}

/// The bench's JSON and markdown reports written at `stem`.
pub fn read_reports(stem: &Path) -> (serde_json::Value, String) {
    let json = std::fs::read_to_string(stem.with_extension("json")).unwrap();
    let md = std::fs::read_to_string(stem.with_extension("md")).unwrap();
    (serde_json::from_str(&json).unwrap(), md)
}
