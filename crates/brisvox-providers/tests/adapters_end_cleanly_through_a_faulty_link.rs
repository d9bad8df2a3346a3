//! Chaos between the real adapters and their fake vendors (#19 item 4): a
//! faulty TCP link (`brisvox_testkit::faulty_tcp`) between the Deepgram STT,
//! Cartesia, ElevenLabs and OpenAI-compatible adapters and their fake servers. Through
//! a delaying link the exchange completes (Deepgram's listen socket too:
//! audio, a Finalize, its final); when the link ends, resets or
//! stalls the server's stream after a seeded number of bytes (anywhere in
//! the clean exchange: in the upgrade, the headers or mid-stream), the
//! adapter ends the request with a typed error (or, past its last needed
//! byte, its normal end) within the test kit's patience: no hang, no panic.
//! Stalls are caught by the adapters' own short timeouts (connect, first
//! audio, first token, next chunk); a TTS stream that stalls after its first
//! audio is the engine's to end (`ProviderLimits::tts_stall`: no audio chunk
//! within the limit fails the response), so the TTS exchange applies that
//! guard to stalls, as the engine does.

mod support_deepgram;
mod support_vendors;

use std::net::SocketAddr;
use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::cartesia::{CartesiaConfig, CartesiaTts};
use brisvox_providers::deepgram::{DeepgramStt, DeepgramSttOptions};
use brisvox_providers::elevenlabs::{ElevenLabsConfig, ElevenLabsTts};
use brisvox_providers::openai_llm::{OpenAiLlm, OpenAiLlmConfig};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{
    ContextId, ErrorKind, LlmEvent, LlmProvider, LlmRequest, Message, ProviderError, SttConfig,
    SttEvent, SttProvider, TtsConfig, TtsEvent, TtsProvider,
};
use brisvox_testkit::PATIENCE;
use brisvox_testkit::dice::Dice;
use brisvox_testkit::faulty_tcp::{FaultyTcp, TcpFault};
use support_deepgram::{Got, counting_frames, results};
use support_vendors::cartesia::{CartesiaScript, FakeCartesia};
use support_vendors::elevenlabs::{ElevenLabsScript, FakeElevenLabs};
use support_vendors::openai::{FakeOpenAi, answer};
use support_vendors::ws::FakeWs;

/// The adapters' timeouts here (connect, first audio or token, next chunk):
/// what ends a stalled stream.
const TIMEOUT_MS: u64 = 400;
/// Cut points drawn per fault.
const SEEDS: u64 = 4;
/// How far the server's stream gets through a faulty link: a delaying one
/// (max 5 ms a chunk) for the clean exchange.
const DELAY: TcpFault = TcpFault::Delay { max_ms: 5 };

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
enum End {
    /// The normal end (TTS `Done`, LLM `Done`).
    Done,
    /// A typed failure.
    Failed(ErrorKind),
}

/// The faults of one seed: each cuts the server's stream at a seeded byte
/// of the `total` bytes the clean exchange sends.
fn cuts(seed: u64, total: u64) -> [TcpFault; 3] {
    let after_bytes = Dice::new(seed, 0).below(total);
    [
        TcpFault::Truncate { after_bytes },
        TcpFault::Reset { after_bytes },
        TcpFault::Stall { after_bytes },
    ]
}

/// Runs `exchange` through a clean link, then through every cut of every
/// seed; each must end (typed) within the patience, and the cuts must fail
/// at least once.
async fn through_faults<F, Fut>(server: SocketAddr, exchange: F)
where
    F: Fn(SocketAddr, TcpFault) -> Fut,
    Fut: std::future::Future<Output = End>,
{
    let link = FaultyTcp::start(server, DELAY, 1).await.unwrap();
    let clean = tokio::time::timeout(PATIENCE, exchange(link.addr(), DELAY)).await;
    assert_eq!(clean, Ok(End::Done), "through a delaying link");
    let total = link.bytes_to_client();
    assert!(total > 0);
    let mut failures = 0;
    for seed in 1..=SEEDS {
        for fault in cuts(seed, total) {
            let link = FaultyTcp::start(server, fault, seed).await.unwrap();
            let end = tokio::time::timeout(PATIENCE, exchange(link.addr(), fault))
                .await
                .unwrap_or_else(|_| panic!("{fault:?} of {total} bytes: no end in time"));
            if let End::Failed(kind) = end {
                assert_ne!(kind, ErrorKind::Cancelled, "{fault:?}");
                failures += 1;
            }
            assert!(
                link.faults_fired() > 0 || end == End::Done,
                "{fault:?}: {end:?}"
            );
        }
    }
    assert!(failures > 0, "no cut of {total} bytes failed a request");
}

fn failed(error: &ProviderError) -> End {
    End::Failed(error.kind())
}

/// The engine's guard on a TTS context (`ProviderLimits::tts_stall`, here
/// the adapters' timeout): the limit between two events, for stalls only, so
/// that an adapter that misses a closed or reset socket still hangs the test.
fn stall_guard(fault: TcpFault) -> Duration {
    match fault {
        TcpFault::Stall { .. } => Duration::from_millis(TIMEOUT_MS),
        _ => PATIENCE,
    }
}

/// One TTS context: "Hello there." flushed, until its end.
async fn speak(tts: &dyn TtsProvider, fault: TcpFault) -> End {
    let mut session = match tts.connect(TtsConfig::default()).await {
        Ok(s) => s,
        Err(e) => return failed(&e),
    };
    let c = ContextId::new(Epoch(1), 0);
    let sent = async {
        session.sender().start_context(c).await?;
        session.sender().send_text(c, "Hello there.").await?;
        session.sender().flush(c).await
    }
    .await;
    loop {
        let Ok(event) = tokio::time::timeout(stall_guard(fault), session.recv()).await else {
            return End::Failed(ErrorKind::Timeout);
        };
        match event {
            Some(TtsEvent::Done { .. }) => return End::Done,
            Some(TtsEvent::Error { error, .. }) => return failed(&error),
            Some(TtsEvent::Closed) | None => {
                panic!("the session closed without an error (sent: {sent:?})")
            }
            Some(_) => {}
        }
    }
}

#[tokio::test]
async fn cartesia() {
    let fake = FakeWs::start(|| FakeCartesia::new(CartesiaScript::default())).await;
    through_faults(fake.addr, |addr, fault| async move {
        let tts = CartesiaTts::new(
            CartesiaConfig::new(ApiKey::new("k"), "sonic-2", "voice-1")
                .with_url(format!("ws://{addr}/tts/websocket"))
                .with_timeouts(TIMEOUT_MS, TIMEOUT_MS),
        );
        speak(&tts, fault).await
    })
    .await;
}

#[tokio::test]
async fn elevenlabs() {
    let fake = FakeWs::start(|| FakeElevenLabs::new(ElevenLabsScript::default())).await;
    through_faults(fake.addr, |addr, fault| async move {
        let tts = ElevenLabsTts::new(
            ElevenLabsConfig::new(ApiKey::new("k"), "eleven_flash_v2_5", "voice1")
                .with_base_url(format!("ws://{addr}"))
                .with_timeouts(TIMEOUT_MS, TIMEOUT_MS),
        );
        speak(&tts, fault).await
    })
    .await;
}

#[tokio::test]
async fn openai_compatible() {
    // Enough answers for every request and retry of the run.
    let script = vec![answer(&["Hello", " there", "."]); 256];
    let fake = FakeOpenAi::start(script).await;
    through_faults(fake.addr, |addr, _| {
        let base_url = format!("http://{addr}/v1");
        async move {
            let llm = OpenAiLlm::new(
                OpenAiLlmConfig::new(ApiKey::new("k"), "gpt-test")
                    .with_base_url(base_url)
                    .with_timeouts(TIMEOUT_MS, TIMEOUT_MS)
                    .with_retries(2, 10),
            );
            let mut stream = llm.stream(LlmRequest::new(vec![Message::user("hi")]));
            while let Some(event) = stream.next().await {
                match event {
                    LlmEvent::Done => return End::Done,
                    LlmEvent::Error(e) => return failed(&e),
                    _ => {}
                }
            }
            panic!("the stream ended without Done or an error")
        }
    })
    .await;
}

/// Serves every listen socket of `fake`: each Finalize gets its final.
fn serve_listen(mut fake: support_deepgram::FakeWs) {
    tokio::spawn(async move {
        while let Some(mut conn) = fake.accepts_within(PATIENCE).await {
            tokio::spawn(async move {
                loop {
                    match conn.recv().await {
                        Got::Text(t) if t.contains("Finalize") => {
                            conn.send_text(results("hello there", true, true, 0.0, 0.06))
                                .await;
                        }
                        Got::Closed => return,
                        _ => {}
                    }
                }
            });
        }
    });
}

#[tokio::test]
async fn deepgram_stt() {
    let fake = support_deepgram::FakeWs::start().await;
    let server: SocketAddr = fake.base.trim_start_matches("ws://").parse().unwrap();
    serve_listen(fake);
    through_faults(server, |addr, _| async move {
        let mut options = DeepgramSttOptions::default();
        options.url = format!("ws://{addr}/v1/listen");
        options.connect_timeout = Duration::from_millis(TIMEOUT_MS);
        options.first_result_timeout = Duration::from_millis(TIMEOUT_MS);
        options.finalize_timeout = Duration::from_millis(TIMEOUT_MS);
        options.finalize_idle_timeout = Duration::from_millis(TIMEOUT_MS);
        options.reconnect_attempts = 2;
        let stt = DeepgramStt::new("k", options);
        let (sender, mut events) = match stt.connect(SttConfig::default()).await {
            Ok(session) => session.split(),
            Err(e) => return failed(&e),
        };
        for frame in &counting_frames(0, 3) {
            let _ = sender.send_audio(frame);
        }
        let _ = sender.finalize().await;
        loop {
            match events.recv().await {
                Some(SttEvent::Final {
                    from_finalize: true,
                    ..
                }) => return End::Done,
                Some(SttEvent::Error(e)) => return failed(&e),
                Some(SttEvent::Closed) | None => panic!("the session closed without an error"),
                Some(_) => {}
            }
        }
    })
    .await;
}
