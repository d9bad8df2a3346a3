//! `recv` on STT and TTS sessions and `next` on LLM streams are cancel safe:
//! a loop that keeps losing them to a faster timer in `tokio::select!` still
//! sees every event, in order.

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::mock::{MockLlm, MockTts};
use brisvox_providers::{
    ContextId, LlmEvent, LlmProvider, LlmRequest, Message, TtsConfig, TtsEvent, TtsProvider,
};

#[tokio::test(start_paused = true)]
async fn every_llm_token_and_tts_chunk_survives_a_busy_select() {
    let llm = MockLlm::default();
    llm.push_answer("one two three four five six seven eight");
    let tts = MockTts::default();
    let mut speech = tts.connect(TtsConfig::default()).await.unwrap();
    let ctx = ContextId::new(Epoch(1), 0);
    speech.sender().start_context(ctx).await.unwrap();
    let mut stream = llm.stream(LlmRequest::new(vec![Message::user("count")]));
    let mut ticker = tokio::time::interval(Duration::from_millis(7));
    let (mut text, mut samples, mut ticks) = (String::new(), 0usize, 0u32);
    let mut llm_done = false;
    loop {
        tokio::select! {
            _ = ticker.tick() => ticks += 1,
            event = stream.next(), if !llm_done => match event {
                Some(LlmEvent::TextDelta(delta)) => {
                    speech.sender().send_text(ctx, delta.clone()).await.unwrap();
                    text.push_str(&delta);
                }
                Some(LlmEvent::Done) | None => {
                    speech.sender().flush(ctx).await.unwrap();
                    llm_done = true;
                }
                Some(_) => {}
            },
            event = speech.recv() => match event.unwrap() {
                TtsEvent::Audio { samples: s, .. } => samples += s.len(),
                TtsEvent::Done { .. } => break,
                other => panic!("unexpected {other:?}"),
            },
        }
    }
    assert_eq!(text, "one two three four five six seven eight");
    assert_eq!(
        samples,
        text.chars().count() * 60 * 24,
        "60 ms per character at 24 kHz"
    );
    assert!(ticks > 100, "the timer won many rounds: {ticks}");
}
