//! The inbox types of every stage, in one module.
//!
//! A stage imports the inbox type of the stage it sends to from here, never
//! from that stage's module: the pipeline is a ring (the output stage reports
//! back to the driver), and importing each other's modules would make the
//! module graph a ring too. `scripts/check-module-cycles.py` keeps it that way.
//!
//! Every [`DriverInput`] carries the time it happened at (`at`), stamped by
//! the stage that saw it, so the turn machine is fed the event's time and not
//! the moment the driver got round to it.

use std::time::Instant;

use brisvox_core::{AudioFrame, Epoch};

use crate::edge::Control;

/// What the other stages tell the turn driver.
#[derive(Debug)]
pub(crate) enum DriverInput {
    /// The VAD confirmed speech that started at `at` (audio time), decided at `decided`.
    SpeechStart { at: Instant, decided: Instant },
    /// The VAD's falling hint (early analysis): if this fall is confirmed,
    /// its stop will carry `speech_end` (the hint's time, in audio time).
    SpeechFalling { speech_end: Instant },
    /// The VAD confirmed a stop; speech ended at `speech_end` (backdated).
    SpeechEnd {
        speech_end: Instant,
        decided: Instant,
    },
    /// An interim transcript, received at `at`.
    Interim { text: String, at: Instant },
    /// A final transcript, received at `at`.
    Final {
        text: String,
        from_finalize: bool,
        at: Instant,
    },
    /// The STT session reported an error at `at` (it may go on).
    SttError { at: Instant },
    /// The STT session is gone for good (seen at `at`).
    SttLost { at: Instant },
    /// The first frame of `epoch`'s response reached the transport at `at`.
    AudioStarted { epoch: Epoch, at: Instant },
    /// `epoch`'s response has played out (or produced nothing, or failed) at `at`.
    ResponseFinished { epoch: Epoch, at: Instant },
    /// A response was cut: what of it the caller heard (its own measure of
    /// time is the audio played).
    Heard { heard: crate::playout::Heard },
    /// A control from the call's edge (say, DTMF, metadata, hang-up), with
    /// the time the edge received it.
    Control { control: Control, at: Instant },
    /// The caller hung up (the edge's source ended) at `at`.
    Hangup { at: Instant },
    /// The transport refused audio at `at`.
    TransportClosed { at: Instant },
}

/// What the driver asks of the LLM stage.
#[derive(Debug)]
pub(crate) enum LlmInput {
    /// Answer the caller's `user_text` in `epoch`.
    Start { epoch: Epoch, user_text: String },
    /// Answer in `epoch` over the conversation as it stands (no caller turn).
    Respond { epoch: Epoch },
    /// Say `text` in `epoch` without the model.
    Speak { epoch: Epoch, text: String },
    /// The caller heard the first `words` words of `epoch`'s answer.
    Heard { epoch: Epoch, words: usize },
    /// Speak the words of `interrupted`'s answer the caller did not hear, in `epoch`.
    Resume { interrupted: Epoch, epoch: Epoch },
    /// Start a speculative run for `text` in `epoch` (replacing any other).
    Speculate { epoch: Epoch, text: String },
    /// The caller spoke again: drop `epoch`'s speculative run.
    Withdraw { epoch: Epoch },
    /// Change the model's context from the next completion on.
    Context(crate::controls::ContextUpdate),
}

/// What the LLM stage sends the segmenter.
#[derive(Debug)]
pub(crate) enum SegInput {
    /// More answer text of `epoch`.
    Delta { epoch: Epoch, text: String },
    /// Speak what `epoch` has sent so far, even mid-sentence: the response
    /// pauses (its tools run) but has not ended.
    Flush { epoch: Epoch },
    /// `epoch`'s answer is complete (or failed).
    End { epoch: Epoch },
}

/// What the segmenter sends the TTS stage.
#[derive(Debug)]
pub(crate) enum TtsInput {
    /// A chunk to speak in `epoch`.
    Chunk { epoch: Epoch, text: String },
    /// `epoch`'s response waits (its tools run): what was sent may play out
    /// and the provider may go quiet without that being a stall, until the
    /// next chunk.
    Pause { epoch: Epoch },
    /// `epoch`'s text is complete.
    End { epoch: Epoch },
}

/// What the TTS stage sends the output stage.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // Frames stay inline: boxing would allocate per frame.
pub(crate) enum OutInput {
    /// A frame of `epoch`'s response at the transport rate.
    Frame { epoch: Epoch, frame: AudioFrame },
    /// A chunk of `epoch`'s text, as written, was sent to the TTS.
    Text { epoch: Epoch, text: String },
    /// The TTS's word timings of `epoch`'s audio.
    Words {
        epoch: Epoch,
        words: Vec<brisvox_providers::WordTiming>,
    },
    /// `epoch`'s response has no more audio.
    End { epoch: Epoch },
}
