//! Files an operator or a test hands the server: the agent file
//! (`brisvox-server`) and WAV audio (`brisvox-audio`).
//!
//! Checked besides "no panic": an accepted agent file never prints a
//! secret's value, and one without secrets prints as TOML that parses back
//! to the same settings; an accepted WAV file writes back to a file that
//! reads the same.

use brisvox_audio::wav::{read_wav, write_wav};
use brisvox_server::agent::AgentSettings;
use brisvox_server::agent::exposure::check_exposure;

/// The value every `${NAME}` resolves to while fuzzing.
const SECRET_VALUE: &str = "fuzz-secret-value";

/// The agent file (TOML), parsed and checked as `brisvox check` does.
pub fn agent_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return; // `AgentSettings::load` refuses a file that is not UTF-8 first
    };
    let env = |_: &str| Some(SECRET_VALUE.to_owned());
    let Ok(settings) = AgentSettings::from_toml_str(text, &env) else {
        return;
    };
    let printed = settings.to_redacted_toml();
    assert!(
        !printed.contains(SECRET_VALUE),
        "a secret printed: {printed}"
    );
    // Redacted secrets are not references any more: only a file without
    // secrets reads back.
    if !printed.contains("<redacted") {
        let reparsed = AgentSettings::from_toml_str(&printed, &env)
            .unwrap_or_else(|e| panic!("the printed settings do not parse: {e}\n{printed}"));
        assert_eq!(reparsed, settings, "the printed settings differ");
    }
    let bind = "0.0.0.0:8080".parse().expect("a literal address");
    let _ = check_exposure(&settings, bind, false);
}

/// A WAV file, read, converted to mono and written back.
pub fn wav(data: &[u8]) {
    let Ok(audio) = read_wav(data) else {
        return;
    };
    let mono = audio.to_mono();
    assert_eq!(
        mono.len(),
        audio.samples.len() / usize::from(audio.spec.channels.max(1))
    );
    let _ = audio.duration_ms();
    let written = write_wav(audio.spec, &audio.samples).expect("what was read can be written");
    assert_eq!(
        read_wav(&written).as_ref(),
        Ok(&audio),
        "a different read back"
    );
}
