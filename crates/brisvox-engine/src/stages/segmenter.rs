//! The segmenter stage: LLM deltas in, speakable chunks out.
//!
//! Runs [`Segmenter::push_into`] per delta on the worker (its cost is bounded
//! by the chunk limit, see brisvox-text) and marks `LlmFirstSentence` when a
//! response's first chunk leaves, the moment its first audio can start. A
//! response ends with `End`, after which the next delta starts a new response
//! (first chunk again). `Flush` speaks the pending text of a response that
//! pauses for its tool calls (the text after them is cut as a new stream
//! within the same response). Items of a stale epoch are dropped on sight and the
//! pending text of a stale response is thrown away. Each chunk handed to the
//! TTS is also told to the event listener ([`EngineEvent::BotText`]).

use brisvox_core::Epoch;
use brisvox_core::timeline::TurnEvent;
use brisvox_text::segment::{Segmenter, SegmenterConfig};
use tokio::sync::{mpsc, watch};

use super::inbox::{SegInput, TtsInput};
use super::{SharedTimeline, forward, mark, now, shutdown};
use crate::events::{EngineEvent, EventBus};

/// The segmenter stage actor.
pub(crate) struct SegmenterStage {
    inbox: mpsc::Receiver<SegInput>,
    tts: mpsc::Sender<TtsInput>,
    segmenter: Segmenter,
    /// The response being cut, and whether its first chunk has left.
    active: Option<(Epoch, bool)>,
    chunks: Vec<String>,
    timeline: SharedTimeline,
    floor: watch::Receiver<Epoch>,
    shutdown: watch::Receiver<bool>,
    events: EventBus,
}

impl SegmenterStage {
    /// Builds the actor.
    pub(crate) fn new(
        config: SegmenterConfig,
        inbox: mpsc::Receiver<SegInput>,
        tts: mpsc::Sender<TtsInput>,
        timeline: SharedTimeline,
        floor: watch::Receiver<Epoch>,
        shutdown: watch::Receiver<bool>,
        events: EventBus,
    ) -> Self {
        SegmenterStage {
            inbox,
            tts,
            segmenter: Segmenter::new(config),
            active: None,
            chunks: Vec::with_capacity(8),
            timeline,
            floor,
            shutdown,
            events,
        }
    }

    /// Cuts responses until the call shuts down.
    pub(crate) async fn run(mut self) {
        loop {
            let input = tokio::select! {
                biased;
                () = shutdown(&mut self.shutdown) => return,
                input = self.inbox.recv() => input,
            };
            match input {
                Some(SegInput::Delta { epoch, text }) => self.on_delta(epoch, &text).await,
                Some(SegInput::Flush { epoch }) => self.on_flush(epoch).await,
                Some(SegInput::End { epoch }) => self.on_end(epoch).await,
                None => return,
            }
        }
    }

    fn is_stale(&self, epoch: Epoch) -> bool {
        epoch.is_stale(*self.floor.borrow())
    }

    async fn on_delta(&mut self, epoch: Epoch, text: &str) {
        if self.is_stale(epoch) {
            return;
        }
        if self.active.is_none_or(|(e, _)| e != epoch) {
            self.segmenter.reset();
            self.active = Some((epoch, false));
        }
        self.segmenter.push_into(text, &mut self.chunks);
        // Taken out so the loop can borrow self; put back empty to keep its capacity.
        let mut chunks = std::mem::take(&mut self.chunks);
        for chunk in chunks.drain(..) {
            self.send_chunk(epoch, chunk).await;
        }
        self.chunks = chunks;
    }

    async fn on_flush(&mut self, epoch: Epoch) {
        if self.is_stale(epoch) || self.active.is_none_or(|(e, _)| e != epoch) {
            return;
        }
        if let Some(rest) = self.segmenter.finish() {
            self.send_chunk(epoch, rest).await;
        }
        forward(&self.tts, TtsInput::Pause { epoch }, epoch, &mut self.floor).await;
    }

    async fn on_end(&mut self, epoch: Epoch) {
        if self.is_stale(epoch) {
            return;
        }
        if self.active.is_some_and(|(e, _)| e == epoch)
            && let Some(last) = self.segmenter.finish()
        {
            self.send_chunk(epoch, last).await;
        }
        self.active = None;
        forward(&self.tts, TtsInput::End { epoch }, epoch, &mut self.floor).await;
    }

    async fn send_chunk(&mut self, epoch: Epoch, text: String) {
        if let Some((_, first_sent)) = self.active.as_mut()
            && !*first_sent
        {
            *first_sent = true;
            mark(&self.timeline, epoch, TurnEvent::LlmFirstSentence, now());
        }
        let chunk = TtsInput::Chunk {
            epoch,
            text: text.clone(),
        };
        if forward(&self.tts, chunk, epoch, &mut self.floor).await {
            self.events.emit(EngineEvent::BotText { epoch, text });
        }
    }
}
