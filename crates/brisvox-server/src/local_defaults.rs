//! What `brisvox serve` runs with no agent file: the talking local demo.
//!
//! A newcomer runs `scripts/run.sh`, opens the page and speaks; the answer
//! must come back as a voice with no provider account. So the embedded
//! defaults pick each local provider that can run on this machine and fall
//! back to the mock one (logged, with the reason) when it cannot:
//!
//! - STT: local Whisper tiny.en when the model is fetched
//!   ([`crate::local_stt::prefer_local_stt`]), else the mock; with it the
//!   final timeout is [`LOCAL_STT_FINAL_TIMEOUT_MS`] (recognition shares the
//!   machine's cores with everything else);
//! - LLM: the built-in rules agent (always available);
//! - TTS: the local voice (Piper when fetched, else espeak-ng's own) when the
//!   `espeak-ng` program is installed (Piper needs its phonemes too), else the
//!   mock's tones;
//! - a turn of clear speech that produced no text is answered "Sorry, I
//!   didn't catch that." ([`LOCAL_NOT_HEARD_REPLY`]) instead of silence.

use std::path::Path;

use crate::agent::{AgentSettings, LOCAL_NOT_HEARD_REPLY, LlmProvider, SttProvider, TtsProvider};
use crate::local_stt::prefer_local_stt;
use crate::local_tts::{LocalVoiceChoice, choose_voice};

/// The program both local voices need.
const ESPEAK_PROGRAM: &str = "espeak-ng";

/// The final timeout with the local STT, in ms: a recognition competes for
/// the cores with the VAD, Smart Turn and the voice, and a final that misses
/// the timeout leaves the turn without text.
pub const LOCAL_STT_FINAL_TIMEOUT_MS: u32 = 2500;

/// The settings `brisvox serve` uses with no agent file (see the module doc).
pub fn local_demo_defaults() -> AgentSettings {
    let mut agent = AgentSettings::mock_defaults();
    prefer_local_stt(&mut agent);
    if agent.stt.provider == SttProvider::Local {
        agent.turn.final_timeout_ms = LOCAL_STT_FINAL_TIMEOUT_MS;
    }
    agent.turn.not_heard_reply = LOCAL_NOT_HEARD_REPLY.to_owned();
    agent.llm.provider = LlmProvider::Local;
    tracing::info!("LLM: the local rules agent (no model, no key)");
    let path = std::env::var_os("PATH");
    prefer_local_tts(&mut agent, program_on_path(ESPEAK_PROGRAM, path.as_deref()));
    agent
}

/// Uses the local voice when `espeak-ng` is installed, else keeps the mock;
/// logs the choice either way.
pub fn prefer_local_tts(agent: &mut AgentSettings, espeak_installed: bool) {
    if agent.tts.provider != TtsProvider::Mock {
        return;
    }
    if !espeak_installed {
        tracing::info!(
            "TTS: mock tones (the local voice needs the program espeak-ng: apt-get install -y espeak-ng)"
        );
        return;
    }
    match choose_voice(agent) {
        Ok(choice) => {
            agent.tts.provider = TtsProvider::Local;
            match choice {
                LocalVoiceChoice::Piper(model) => {
                    tracing::info!(model = %model.display(), "TTS: local Piper voice");
                }
                LocalVoiceChoice::Espeak { voice, why } => {
                    tracing::info!(voice, why, "TTS: local espeak-ng voice");
                }
            }
        }
        Err(e) => tracing::info!(reason = %e, "TTS: mock tones (the local voice cannot run)"),
    }
}

/// Whether `program` is an executable file in one of `path`'s directories.
pub fn program_on_path(program: &str, path: Option<&std::ffi::OsStr>) -> bool {
    let Some(path) = path else {
        return false;
    };
    std::env::split_paths(path).any(|dir| is_executable(&dir.join(program)))
}

fn is_executable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    fn scratch_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "brisvox-local-defaults-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_program_is_found_only_as_an_executable_file_on_the_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch_dir("path");
        let exe = dir.join("speaker");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let plain = dir.join("notes");
        std::fs::write(&plain, "text").unwrap();
        std::fs::create_dir_all(dir.join("folder")).unwrap();

        let path: OsString =
            std::env::join_paths(["/nonexistent-brisvox", dir.to_str().unwrap()]).unwrap();
        assert!(program_on_path("speaker", Some(&path)));
        assert!(!program_on_path("notes", Some(&path)), "not executable");
        assert!(!program_on_path("folder", Some(&path)), "a directory");
        assert!(!program_on_path("absent", Some(&path)));
        assert!(!program_on_path("speaker", None));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn without_espeak_ng_the_defaults_keep_the_mock_voice() {
        let mut agent = AgentSettings::mock_defaults();
        prefer_local_tts(&mut agent, false);
        assert_eq!(agent.tts.provider, TtsProvider::Mock);
    }

    #[test]
    fn with_espeak_ng_the_defaults_speak_with_a_local_voice() {
        let mut agent = AgentSettings::mock_defaults();
        prefer_local_tts(&mut agent, true);
        assert_eq!(agent.tts.provider, TtsProvider::Local);
    }

    #[test]
    fn a_voice_chosen_in_an_agent_file_is_never_replaced() {
        let mut agent = AgentSettings::mock_defaults();
        agent.tts.provider = TtsProvider::Cartesia;
        prefer_local_tts(&mut agent, true);
        assert_eq!(agent.tts.provider, TtsProvider::Cartesia);
    }

    #[test]
    fn the_demo_defaults_answer_with_the_rules_agent_and_pass_their_checks() {
        let agent = local_demo_defaults();
        assert_eq!(agent.llm.provider, LlmProvider::Local);
        assert_eq!(agent.turn.not_heard_reply, LOCAL_NOT_HEARD_REPLY);
        // Whatever this machine has, the result must be a valid agent.
        let text = agent.to_redacted_toml();
        let back = AgentSettings::from_toml_str(&text, &|_| None).unwrap();
        assert_eq!(back, agent);
    }
}
