//! `[[tools]]` and `[tool_calls]` are checked when the agent file is read:
//! each mistake is an error naming the key and what is allowed; a valid
//! file's tools and settings come through as written.

use brisvox_server::agent::{AgentError, AgentSettings, WebhookMethod};

fn tool(fields: &str) -> String {
    format!(
        r#"
[[tools]]
{fields}
"#
    )
}

const OK_PARAMS: &str = r#"parameters = { type = "object", properties = { day = { type = "string", enum = ["mon", "tue"] } }, required = ["day"] }"#;
const OK_HOOK: &str = r#"webhook = { url = "http://127.0.0.1:9/hours" }"#;

fn check(text: &str) -> Result<AgentSettings, AgentError> {
    let env = |var: &str| (var == "TOKEN").then(|| "t0k".to_owned());
    AgentSettings::from_toml_str(text, &env)
}

#[test]
fn a_valid_tool_and_its_defaults() {
    let text = tool(&format!(
        "name = \"opening_hours\"\ndescription = \"Hours.\"\n{OK_PARAMS}\n{OK_HOOK}"
    )) + "\n[tool_calls]\nmax_rounds = 3\nfiller = \"One moment.\"\n";
    let agent = check(&text).unwrap();
    let t = &agent.tools[0];
    assert_eq!(t.name, "opening_hours");
    assert_eq!(t.webhook.method, WebhookMethod::Post);
    assert_eq!(
        (t.webhook.timeout_ms, t.webhook.max_response_bytes),
        (5_000, 65_536)
    );
    assert_eq!(t.parameters["required"][0], "day");
    assert_eq!(agent.tool_calls.max_rounds, 3);
    assert_eq!(agent.tool_calls.filler.as_deref(), Some("One moment."));
    // The redacted dump reads back the same.
    let back = AgentSettings::from_toml_str(&agent.to_redacted_toml(), &|_| None).unwrap();
    assert_eq!(back.tools[0].parameters, t.parameters);
}

#[test]
fn each_mistake_is_named() {
    let cases = [
        (
            tool(&format!(
                "name = \"bad name\"\ndescription = \"x\"\n{OK_HOOK}"
            )),
            "tools[0].name = \"bad name\" is not allowed",
        ),
        (
            tool(&format!("name = \"t\"\ndescription = \" \"\n{OK_HOOK}")),
            "tools[0].description",
        ),
        (
            tool(&format!(
                "name = \"t\"\ndescription = \"x\"\nparameters = {{ type = \"array\" }}\n{OK_HOOK}"
            )),
            "tools[0].parameters.type = \"array\" is not allowed: expected \"object\"",
        ),
        (
            tool(&format!(
                "name = \"t\"\ndescription = \"x\"\nparameters = {{ type = \"object\", properties = {{ a = {{ type = \"strng\" }} }} }}\n{OK_HOOK}"
            )),
            "tools[0].parameters.properties.a.type = \"strng\"",
        ),
        (
            tool(&format!(
                "name = \"t\"\ndescription = \"x\"\nparameters = {{ type = \"object\", required = [\"b\"] }}\n{OK_HOOK}"
            )),
            "tools[0].parameters.required = \"b\"",
        ),
        (
            tool("name = \"t\"\ndescription = \"x\"\nwebhook = { url = \"ftp://x\" }"),
            "tools[0].webhook.url",
        ),
        (
            tool(
                "name = \"t\"\ndescription = \"x\"\nwebhook = { url = \"http://x\", method = \"GET\" }",
            ),
            "unknown variant `GET`, expected one of `POST`, `PUT`, `PATCH`",
        ),
        (
            tool(
                "name = \"t\"\ndescription = \"x\"\nwebhook = { url = \"http://x\", timeout_ms = 0 }",
            ),
            "tools[0].webhook.timeout_ms = 0 is not allowed",
        ),
        (
            tool(
                "name = \"t\"\ndescription = \"x\"\nwebhook = { url = \"http://x\", headers = { Authorization = \"Bearer abc\" } }",
            ),
            "tools[0].webhook.headers.Authorization must reference an environment variable",
        ),
        (
            tool(
                "name = \"t\"\ndescription = \"x\"\nwebhook = { url = \"http://x\", headers = { X-Api-Key = \"${NOPE}\" } }",
            ),
            "tools[0].webhook.headers.X-Api-Key references the environment variable NOPE, which is not set",
        ),
        (
            tool(&format!("name = \"t\"\ndescription = \"x\"\n{OK_HOOK}"))
                + &tool(&format!("name = \"t\"\ndescription = \"y\"\n{OK_HOOK}")),
            "tools[1].name = \"t\" is not allowed: expected a name no other tool has",
        ),
        (
            tool(&format!(
                "name = \"t\"\ndescription = \"x\"\nurl = \"http://x\"\n{OK_HOOK}"
            )),
            "unknown field `url`",
        ),
        (
            "[tool_calls]\nmax_rounds = 0\n".to_owned(),
            "tool_calls.max_rounds = 0",
        ),
        (
            "[tool_calls]\nfiller = \"\"\n".to_owned(),
            "tool_calls.filler",
        ),
    ];
    for (text, want) in cases {
        let error = check(&text).expect_err(&text).to_string();
        assert!(error.contains(want), "{text}\n-> {error}\nwanted: {want}");
    }
}
