//! The controls a route hands the engine besides audio, and their parts
//! and who is calling ([`CallContext`]): a leaf module, used by the edge, the
//! events and the call report alike.

/// Free key/value metadata of a call (the client's `start.metadata`, Twilio's
/// `customParameters`, later the agent link's context updates).
pub type Metadata = serde_json::Map<String, serde_json::Value>;

/// Who is calling: kept by the engine for the whole call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallContext {
    /// The call's id (the client's `call_id`, Twilio's `callSid`).
    pub call_id: String,
    /// The route it came in on (`brisvox_ws`, `twilio`, `sim`).
    pub transport: String,
    /// The call's metadata, as the route gave it and as
    /// [`Control::Metadata`] updated it.
    pub metadata: Metadata,
}

/// A DTMF key: `0`-`9`, `*`, `#` or `A`-`D`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DtmfDigit(char);

/// A character that is not a DTMF key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a DTMF key (0-9, *, #, A-D)")]
pub struct NotADtmfDigit(pub char);

impl DtmfDigit {
    /// The key `c`, if it is one (`a`-`d` are taken as `A`-`D`).
    pub fn new(c: char) -> Result<Self, NotADtmfDigit> {
        let c = c.to_ascii_uppercase();
        match c {
            '0'..='9' | '*' | '#' | 'A'..='D' => Ok(DtmfDigit(c)),
            _ => Err(NotADtmfDigit(c)),
        }
    }

    /// The key as a character.
    pub fn as_char(self) -> char {
        self.0
    }
}

/// A control from the route, outside the audio. Each reaches the turn driver
/// with the time the route received it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Control {
    /// Speak `text` without the LLM. `interrupt: true` cuts what the bot is
    /// saying (its answer, a say or a prompt; queued says are dropped) and
    /// speaks at once; `false` queues it after the current answer. Neither
    /// talks over the caller: while the caller holds the floor the say waits
    /// (an interrupting one at the head of the queue).
    Say {
        /// What to say.
        text: String,
        /// Cut the bot now instead of waiting for it to finish.
        interrupt: bool,
    },
    /// The caller pressed a key (reported as [`EngineEvent::Dtmf`](crate::EngineEvent::Dtmf)).
    Dtmf {
        /// The key.
        digit: DtmfDigit,
    },
    /// Metadata to merge into the call's context (a key given again replaces
    /// the old value).
    Metadata {
        /// The entries.
        update: Metadata,
    },
    /// Change what the model sees from its next completion on (the agent
    /// link's `context.update`). Taken when the model is not answering: an
    /// answer under way finishes over the context it started with.
    Context(ContextUpdate),
    /// Answer now over the conversation as it stands, without a caller turn
    /// (the agent link's `respond`): at once when the bot is idle, after
    /// what it is saying when it speaks, and while the caller holds the
    /// floor it waits for the end of the caller's turn, whose answer spends
    /// it ([`TurnMachine::handle_respond`](crate::turn::TurnMachine::handle_respond)).
    /// A barge-in cancels it like any answer.
    Respond,
    /// End the call now (the agent, the application or the server asks).
    /// `run_call` returns with [`CallEnd::Requested`](crate::CallEnd::Requested).
    Hangup {
        /// Why, for the logs.
        reason: String,
    },
    /// Hand the call over to someone else: the route connects the caller to
    /// `to` (an E.164 number or a `sip:` URI) through its carrier and the
    /// stream ends. The engine ends the call at once, like [`Control::Hangup`],
    /// and `run_call` returns with [`CallEnd::Transferred`](crate::CallEnd::Transferred);
    /// whoever asks says goodbye first (the server's built-in `transfer_call`
    /// tool waits for its `say` to play out).
    Transfer {
        /// Where to, as given (the route checks it).
        to: String,
    },
    /// A control the route could not read (malformed, unknown, refused): the
    /// engine reports it as [`EngineEvent::ControlRejected`](crate::EngineEvent::ControlRejected)
    /// with this stable `code`, so no bad control goes unanswered.
    Invalid {
        /// Stable, machine-readable code (`docs/WEBSOCKET_PROTOCOL.md`).
        code: String,
        /// For people.
        message: String,
    },
}

/// A change of the model's context ([`Control::Context`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ContextUpdate {
    /// A new system prompt, replacing the call's.
    pub system_prompt: Option<String>,
    /// Messages to add after the conversation so far, or to replace it with
    /// (the system prompt stays).
    pub messages: Option<MessagesUpdate>,
}

/// The messages part of a [`ContextUpdate`].
#[derive(Debug, Clone, PartialEq)]
pub struct MessagesUpdate {
    /// True: the items replace the conversation; false: they are appended.
    pub replace: bool,
    /// The messages (system, user or assistant).
    pub items: Vec<brisvox_providers::Message>,
}
