//! A secret whose environment variable is unset (or empty) is an error naming
//! the key and the variable.

use brisvox_server::agent::{AgentError, AgentSettings};

const FILE: &str =
    "[stt]\nprovider = \"deepgram\"\n[stt.deepgram]\napi_key = \"${BRISVOX_TEST_DG_KEY}\"";

#[test]
fn unset_and_empty_variables() {
    for value in [None, Some(String::new())] {
        let e = AgentSettings::from_toml_str(FILE, &|_| value.clone()).unwrap_err();
        match &e {
            AgentError::MissingEnvVar { key, var } => {
                assert_eq!(key, "stt.deepgram.api_key");
                assert_eq!(var, "BRISVOX_TEST_DG_KEY");
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("BRISVOX_TEST_DG_KEY"));
    }
    let ok = AgentSettings::from_toml_str(FILE, &|n| {
        (n == "BRISVOX_TEST_DG_KEY").then(|| "k".to_owned())
    });
    assert!(ok.is_ok());
}
