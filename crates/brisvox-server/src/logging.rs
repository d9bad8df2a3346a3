//! Structured logs with `tracing-subscriber`, as text or JSON lines.
//!
//! The filter comes from `RUST_LOG` (default `info`): comma-separated
//! directives, each a level (`debug`, the default for every target) or
//! `target=level` (`brisvox_providers::local=debug`). That is the
//! `target=level` subset of the usual `RUST_LOG` syntax, without span and
//! field filters (which would compile a regex engine into the server for
//! them). A `RUST_LOG` that does not parse is reported on stderr and `info`
//! is used.

use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (for log collectors).
    Json,
}

/// The filter `RUST_LOG`'s value asks for: `info` when it is unset or empty;
/// an error naming the value when it does not parse.
pub fn filter_from(value: Option<&str>) -> Result<Targets, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(default_filter()),
        Some(spec) => spec
            .parse::<Targets>()
            .map_err(|e| format!("RUST_LOG={spec:?} is not a log filter ({e}); logging at info")),
    }
}

fn default_filter() -> Targets {
    Targets::new().with_default(tracing::Level::INFO)
}

/// Installs the global subscriber, writing to stderr. Later calls do nothing.
pub fn init(format: LogFormat) {
    let filter = filter_from(std::env::var("RUST_LOG").ok().as_deref()).unwrap_or_else(|e| {
        eprintln!("brisvox: {e}");
        default_filter()
    });
    let layer = fmt::layer().with_writer(std::io::stderr);
    // One layer writes, so the filter is global (`registry().with(filter)`),
    // not the layer's own (`layer.with_filter`): a per-layer filter looks
    // the span up in the registry at every enter and exit, which every
    // call's stage tasks do at every poll (1-2 % of the server's CPU at
    // 1000 calls, bench/results/framework-profile-2026-12-02.md). The same
    // lines are written either way.
    // `try_init` fails only when a subscriber is already set (tests); that
    // one keeps working.
    let registry = tracing_subscriber::registry().with(filter);
    let _ = match format {
        LogFormat::Text => registry.with(layer).try_init(),
        LogFormat::Json => registry.with(layer.json()).try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    #[test]
    fn unset_or_empty_is_info() {
        for value in [None, Some(""), Some("  ")] {
            let f = filter_from(value).unwrap();
            assert!(f.would_enable("brisvox_engine", &Level::INFO));
            assert!(!f.would_enable("brisvox_engine", &Level::DEBUG));
        }
    }

    #[test]
    fn a_bare_level_and_per_target_levels() {
        let f = filter_from(Some("warn,brisvox_providers::local=debug")).unwrap();
        assert!(f.would_enable("brisvox_providers::local::stt", &Level::DEBUG));
        assert!(!f.would_enable("brisvox_providers::deepgram", &Level::INFO));
        assert!(f.would_enable("brisvox_server", &Level::WARN));
        let f = filter_from(Some("debug")).unwrap();
        assert!(f.would_enable("anything", &Level::DEBUG));
        assert!(!f.would_enable("anything", &Level::TRACE));
    }

    #[test]
    fn a_value_that_does_not_parse_is_an_error_naming_it() {
        let e = filter_from(Some("brisvox=loud")).unwrap_err();
        assert!(e.contains("brisvox=loud"), "{e}");
    }
}
