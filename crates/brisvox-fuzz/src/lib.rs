//! brisvox-fuzz: one harness per parser of untrusted input, the seed corpus
//! each starts from, and the replay of the kept corpus that CI runs.
//!
//! A harness is a plain `fn(&[u8])` ([`Target::run`]): it feeds the bytes to
//! the parser the way the server does and panics only when the parser panics
//! or breaks one of the properties the harness states (frames of the right
//! size, bounded error texts, replies that stay JSON, settings that print
//! back to themselves). Stateful decoders read the bytes as a sequence of
//! messages ([`messages`]).
//!
//! Three drivers share the harnesses:
//! - `fuzz/` (a cargo workspace of its own, outside the main one) wraps them
//!   in AFL++ through cargo-afl: `scripts/fuzz-campaign.sh` runs a campaign,
//!   minimises the corpus into `fuzz/corpus/<target>/` and copies each crash
//!   into `fuzz/crashes/<target>/` to be turned into a regression test in the
//!   owning crate;
//! - `tests/corpus_replays_cleanly.rs` replays the seeds and the kept corpus
//!   through every harness as a plain test (CI, no AFL);
//! - `brisvox-fuzz-seeds DIR` writes the seeds, one directory per target.

pub mod messages;
pub mod seeds;
pub mod targets;

/// One fuzz target: a parser of untrusted input and the crate that owns it.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The target's name: its corpus directory and the AFL binary's argument.
    pub name: &'static str,
    /// The crate whose parser it drives (where its regression tests go).
    pub owner: &'static str,
    /// What it parses.
    pub what: &'static str,
    /// The harness.
    pub run: fn(&[u8]),
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "call_ws",
        owner: "brisvox-transport",
        what: "/call: the brisvox websocket protocol's client messages",
        run: targets::transport::call_ws,
    },
    Target {
        name: "twilio",
        owner: "brisvox-transport",
        what: "/twilio: Twilio Media Streams messages",
        run: targets::transport::twilio,
    },
    Target {
        name: "telnyx",
        owner: "brisvox-transport",
        what: "Telnyx media streaming messages",
        run: targets::transport::telnyx,
    },
    Target {
        name: "plivo",
        owner: "brisvox-transport",
        what: "Plivo audio stream messages",
        run: targets::transport::plivo,
    },
    Target {
        name: "vonage",
        owner: "brisvox-transport",
        what: "Vonage websocket messages (JSON text, binary L16)",
        run: targets::transport::vonage,
    },
    Target {
        name: "exotel",
        owner: "brisvox-transport",
        what: "Exotel AgentStream messages",
        run: targets::transport::exotel,
    },
    Target {
        name: "agent_link",
        owner: "brisvox-agent-link",
        what: "the agent link: an agent's commands, through the link's core",
        run: targets::link::agent_link,
    },
    Target {
        name: "sse",
        owner: "brisvox-providers",
        what: "OpenAI-compatible chat completions: SSE lines and chunks",
        run: targets::providers::sse,
    },
    Target {
        name: "deepgram",
        owner: "brisvox-providers",
        what: "Deepgram listen and speak socket messages",
        run: targets::providers::deepgram,
    },
    Target {
        name: "cartesia",
        owner: "brisvox-providers",
        what: "Cartesia TTS websocket messages",
        run: targets::providers::cartesia,
    },
    Target {
        name: "elevenlabs",
        owner: "brisvox-providers",
        what: "ElevenLabs multi-context websocket messages",
        run: targets::providers::elevenlabs,
    },
    Target {
        name: "agent_file",
        owner: "brisvox-server",
        what: "the agent file (TOML)",
        run: targets::files::agent_file,
    },
    Target {
        name: "wav",
        owner: "brisvox-audio",
        what: "WAV files",
        run: targets::files::wav,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
