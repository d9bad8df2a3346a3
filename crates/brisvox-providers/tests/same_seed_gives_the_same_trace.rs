//! Three concurrent simulated calls over the three mocks, with log-normal
//! latencies and random faults: the same seed gives the same trace, event for
//! event and millisecond for millisecond; another seed gives another trace.

mod common;

use brisvox_core::Epoch;
use brisvox_providers::mock::{
    Fault, FaultPlan, Latency, MockLlm, MockLlmConfig, MockStt, MockSttConfig, MockTts,
    MockTtsConfig,
};
use brisvox_providers::{
    ContextId, LlmEvent, LlmProvider, LlmRequest, Message, ProviderError, SttConfig, SttEvent,
    SttProvider, TtsConfig, TtsEvent, TtsProvider,
};
use common::{ms_since, play, speech_frame};
use tokio::time::Instant;

fn log_normal(median_ms: f64) -> Latency {
    Latency::LogNormal {
        median_ms,
        sigma: 0.4,
    }
}

fn mocks(seed: u64) -> (MockStt, MockLlm, MockTts) {
    let stt = MockStt::new(MockSttConfig {
        seed,
        final_latency: log_normal(150.0),
        ..MockSttConfig::default()
    });
    stt.set_transcriber(|i| format!("question number {i}"));
    let llm = MockLlm::new(MockLlmConfig {
        seed,
        first_token: log_normal(350.0),
        token_interval: log_normal(30.0),
        ..MockLlmConfig::default()
    });
    llm.set_responder(|req| format!("You asked {}.", req.last_user_text().unwrap_or("")));
    let server_error = Fault::FailAfter {
        items: 1,
        error: ProviderError::server(502, "bad gateway"),
    };
    llm.set_faults(FaultPlan::none().with_probability(0.3, server_error));
    let tts = MockTts::new(MockTtsConfig {
        seed,
        first_byte: log_normal(150.0),
        ..MockTtsConfig::default()
    });
    (stt, llm, tts)
}

/// One call: two turns of speech -> final -> LLM -> TTS, traced.
async fn call(id: u32, stt: MockStt, llm: MockLlm, tts: MockTts) -> Vec<String> {
    let start = Instant::now();
    let mut trace = Vec::new();
    let mut stt = stt.connect(SttConfig::default()).await.unwrap();
    let mut speech = tts.connect(TtsConfig::default()).await.unwrap();
    for turn in 0..2u32 {
        play(stt.sender(), 25 + 10 * id as usize, |_| speech_frame()).await;
        stt.finalize().await.unwrap();
        let text = loop {
            if let Some(SttEvent::Final { text, .. }) = stt.recv().await {
                break text;
            }
        };
        trace.push(format!("{id} {} final {text}", ms_since(start)));
        let ctx = ContextId::new(Epoch(u64::from(turn) + 1), turn);
        speech.sender().start_context(ctx).await.unwrap();
        let mut answer = llm.stream(LlmRequest::new(vec![Message::user(text)]));
        while let Some(event) = answer.next().await {
            trace.push(format!("{id} {} llm {event:?}", ms_since(start)));
            if let LlmEvent::TextDelta(delta) = event {
                speech.sender().send_text(ctx, delta).await.unwrap();
            }
        }
        speech.sender().flush(ctx).await.unwrap();
        let mut samples = 0;
        while let Some(event) = speech.recv().await {
            match event {
                TtsEvent::Audio { samples: s, .. } => samples += s.len(),
                other => {
                    trace.push(format!(
                        "{id} {} tts {other:?} after {samples}",
                        ms_since(start)
                    ));
                    break;
                }
            }
        }
    }
    trace
}

async fn run(seed: u64) -> Vec<Vec<String>> {
    let (stt, llm, tts) = mocks(seed);
    let calls: Vec<_> = (0..3)
        .map(|id| tokio::spawn(call(id, stt.clone(), llm.clone(), tts.clone())))
        .collect();
    let mut traces = Vec::new();
    for c in calls {
        traces.push(c.await.unwrap());
    }
    traces
}

#[tokio::test(start_paused = true)]
async fn the_same_seed_replays_the_same_trace() {
    let first = run(11).await;
    let second = run(11).await;
    assert_eq!(first, second);
    assert!(first.iter().all(|t| t.len() > 6), "{first:#?}");
    let other = run(12).await;
    assert_ne!(
        first, other,
        "another seed should move at least one latency"
    );
}
