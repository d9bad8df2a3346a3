//! Speculative LLM start, the LLM stage's half: one run started for a
//! candidate text of the caller's turn before the turn ends, its events held
//! (not spoken) until the turn ends.
//!
//! The turn machine offers candidates ([`crate::turn::speculation`]). A run is
//! committed when the turn ends in the same epoch with the same words
//! ([`same_turn_text`]): its held events are replayed as the response's and its
//! stream goes on as the response's stream. Otherwise it is discarded (a
//! different final, a newer candidate) or withdrawn (the caller spoke again),
//! and its stream cancelled. The request of a run is the one the turn would
//! have sent: the conversation so far and the candidate as the user message.
//!
//! What a run that is not committed cost is counted: the output it had
//! streamed ([`SpeculationCounters::wasted_output_tokens`]: the provider's
//! count when it reported usage, else its text and tool-call deltas) and the
//! input tokens the provider reported for it.

use brisvox_core::Epoch;
use brisvox_providers::{LlmEvent, LlmStream};

use crate::report::SpeculationCounters;
use crate::turn::same_turn_text;

/// Events a run may hold before it stops reading its stream (the provider
/// waits; a run this far ahead of the turn's end has more than enough).
pub(crate) const MAX_HELD_EVENTS: usize = 512;

/// A run in flight.
pub(crate) struct SpecRun {
    pub(crate) epoch: Epoch,
    text: String,
    /// The version of the conversation the request was built on.
    version: u64,
    stream: LlmStream,
    held: Vec<LlmEvent>,
    /// The stream ended (done, error, gone): nothing more to read.
    ended: bool,
}

impl SpecRun {
    pub(crate) fn new(epoch: Epoch, text: String, version: u64, stream: LlmStream) -> Self {
        SpecRun {
            epoch,
            text,
            version,
            stream,
            held: Vec::new(),
            ended: false,
        }
    }

    /// Whether the stage should read the next event of this run.
    pub(crate) fn wants_events(&self) -> bool {
        !self.ended && self.held.len() < MAX_HELD_EVENTS
    }

    /// Holds one event of the run's stream (`None`: the stream is gone).
    pub(crate) fn hold(&mut self, event: Option<LlmEvent>) {
        match event {
            Some(event) => {
                self.ended = matches!(event, LlmEvent::Done | LlmEvent::Error(_));
                self.held.push(event);
            }
            None => self.ended = true,
        }
    }

    /// Whether the turn that ended in `epoch` with `user_text`, on version
    /// `version` of the conversation, is this run's.
    pub(crate) fn matches(&self, epoch: Epoch, user_text: &str, version: u64) -> bool {
        self.epoch == epoch && self.version == version && same_turn_text(&self.text, user_text)
    }

    /// The run becomes the response: its stream and the events it held.
    /// A stream that had ended yields nothing more.
    pub(crate) fn commit(self) -> (Option<LlmStream>, Vec<LlmEvent>) {
        let stream = (!self.ended).then_some(self.stream);
        (stream, self.held)
    }

    /// Cancels the run and adds what it cost to `counters`.
    pub(crate) fn drop_counted(mut self, counters: &mut SpeculationCounters) {
        self.stream.cancel();
        let (mut deltas, mut reported_output) = (0u64, None);
        for event in &self.held {
            match event {
                LlmEvent::TextDelta(_) | LlmEvent::ToolCallDelta { .. } => deltas += 1,
                LlmEvent::Usage {
                    input_tokens,
                    output_tokens,
                } => {
                    counters.wasted_input_tokens += u64::from(*input_tokens);
                    reported_output = Some(u64::from(*output_tokens));
                }
                _ => {}
            }
        }
        counters.wasted_output_tokens += reported_output.unwrap_or(deltas);
    }
}

/// The next event of the run, or never when there is none to read.
///
/// # Cancel safety
///
/// Cancel safe: [`LlmStream::next`] is.
pub(crate) async fn next_spec_event(run: &mut Option<SpecRun>) -> Option<LlmEvent> {
    match run.as_mut().filter(|r| r.wants_events()) {
        Some(run) => run.stream.next().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: Vec<LlmEvent>) -> SpecRun {
        let mut r = SpecRun::new(
            Epoch::ZERO.next(),
            "book a table".into(),
            7,
            LlmStream::new(futures_util::stream::empty()),
        );
        for e in events {
            r.hold(Some(e));
        }
        r
    }

    #[test]
    fn a_run_matches_its_epoch_and_words_only() {
        let r = run(vec![]);
        let e = Epoch::ZERO.next();
        assert!(r.matches(e, "Book a table.", 7));
        assert!(!r.matches(e.next(), "book a table", 7));
        assert!(!r.matches(e, "book a table for two", 7));
        assert!(!r.matches(e, "book a table", 8), "the conversation changed");
    }

    #[test]
    fn a_dropped_run_counts_its_deltas_or_the_reported_usage() {
        let mut c = SpeculationCounters::default();
        let r = run(vec![
            LlmEvent::TextDelta("Sure".into()),
            LlmEvent::TextDelta(", ".into()),
        ]);
        assert!(r.wants_events());
        r.drop_counted(&mut c);
        assert_eq!((c.wasted_output_tokens, c.wasted_input_tokens), (2, 0));
        let r = run(vec![
            LlmEvent::TextDelta("Sure".into()),
            LlmEvent::Usage {
                input_tokens: 40,
                output_tokens: 5,
            },
            LlmEvent::Done,
        ]);
        assert!(!r.wants_events(), "done: nothing more to read");
        r.drop_counted(&mut c);
        assert_eq!((c.wasted_output_tokens, c.wasted_input_tokens), (7, 40));
    }

    #[test]
    fn a_committed_run_that_ended_gives_its_events_and_no_stream() {
        let (stream, held) = run(vec![LlmEvent::TextDelta("Hi".into()), LlmEvent::Done]).commit();
        assert!(stream.is_none());
        assert_eq!(held.len(), 2);
        let (stream, held) = run(vec![LlmEvent::TextDelta("Hi".into())]).commit();
        assert!(stream.is_some());
        assert_eq!(held.len(), 1);
    }
}
