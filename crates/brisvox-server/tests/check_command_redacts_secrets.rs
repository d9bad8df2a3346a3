//! `brisvox check FILE` prints the resolved settings with secrets redacted, and
//! fails with the error on a bad file.

use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn brisvox() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brisvox"));
    for var in [
        "DEEPGRAM_API_KEY",
        "OPENAI_API_KEY",
        "CARTESIA_API_KEY",
        "BRISVOX_CALL_TOKEN",
        "BRISVOX_TWILIO_TOKEN",
        "TWILIO_AUTH_TOKEN",
    ] {
        cmd.env(var, format!("TOPSECRET-{var}"));
    }
    cmd
}

#[test]
fn resolved_settings_never_show_a_secret() {
    let out = brisvox()
        .arg("check")
        .arg(format!("{ROOT}/examples/agent.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stdout.contains("TOPSECRET") && !stderr.contains("TOPSECRET"),
        "{stdout}"
    );
    assert!(
        stdout.contains("api_key = \"<redacted, from $DEEPGRAM_API_KEY>\""),
        "{stdout}"
    );
    assert!(stdout.contains("provider = \"deepgram\""));
    assert!(
        stdout.contains("auth_token = \"<redacted, from $TWILIO_AUTH_TOKEN>\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("min_silence_ms = 100"),
        "resolved values are printed"
    );
}

#[test]
fn mock_settings_are_labelled_and_bad_files_fail() {
    let out = brisvox()
        .arg("check")
        .arg(format!("{ROOT}/examples/agent-mock.toml"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("mock providers selected")
    );

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[stt]\nprovider = \"deepgram\"\n[stt.deepgram]\napi_key = \"${NOT_SET_ANYWHERE_42}\"\n",
    )
    .unwrap();
    let out = brisvox().arg("check").arg(&bad).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("NOT_SET_ANYWHERE_42") && stderr.contains("stt.deepgram.api_key"),
        "{stderr}"
    );
}
