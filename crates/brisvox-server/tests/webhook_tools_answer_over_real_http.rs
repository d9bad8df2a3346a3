//! The agent file's webhook tools against a real local HTTP server: a
//! success (its JSON is the result; the request carries the call id, the
//! tool call id, the arguments, the call's metadata and the configured
//! header), 4xx and 5xx answers, a server that never answers (cut at the
//! tool's timeout), malformed JSON, an oversized body and an empty one each
//! give the model a result or an error that says why.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use brisvox_core::Epoch;
use brisvox_engine::{ToolExecutor, ToolInvocation, ToolOutcome};
use brisvox_server::agent::AgentSettings;
use brisvox_server::webhook::WebhookTools;
use serde_json::{Value, json};

type Seen = Arc<Mutex<Vec<(HeaderMap, Value)>>>;

async fn http_server(seen: Seen) -> String {
    let record = move |headers: HeaderMap, body: Bytes| {
        let seen = seen.clone();
        async move {
            let body: Value = serde_json::from_slice(&body).unwrap();
            let order = body["arguments"]["order_id"].clone();
            seen.lock().unwrap().push((headers, body));
            axum::Json(json!({"order_id": order, "status": "shipped"}))
        }
    };
    let app = Router::new()
        .route("/ok", post(record))
        .route(
            "/missing",
            post(|| async { (StatusCode::NOT_FOUND, "no such order") }),
        )
        .route(
            "/broken",
            post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "database down") }),
        )
        .route("/never", post(std::future::pending::<&'static str>))
        .route("/not_json", post(|| async { "status: shipped" }))
        .route("/huge", post(|| async { "x".repeat(100_000) }))
        .route("/empty", post(|| async { StatusCode::NO_CONTENT }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn agent_file(base: &str) -> String {
    let mut toml = String::new();
    for (name, path) in [
        ("ok", "ok"),
        ("missing", "missing"),
        ("broken", "broken"),
        ("never", "never"),
        ("not_json", "not_json"),
        ("huge", "huge"),
        ("empty", "empty"),
    ] {
        toml.push_str(&format!(
            r#"
[[tools]]
name = "{name}"
description = "A test tool."
parameters = {{ type = "object", properties = {{ order_id = {{ type = "string" }} }}, required = ["order_id"] }}
webhook = {{ url = "{base}/{path}", timeout_ms = 400, max_response_bytes = 1000, headers = {{ Authorization = "Bearer ${{ORDERS_TOKEN}}" }} }}
"#
        ));
    }
    toml
}

async fn call(tools: &dyn ToolExecutor, name: &str) -> ToolOutcome {
    tools
        .invoke(ToolInvocation {
            call_id: Arc::from("call_abc"),
            name: Arc::from(name),
            arguments: Arc::from(r#"{"order_id":"42"}"#),
            epoch: Epoch(3),
        })
        .await
}

#[tokio::test]
async fn each_answer_becomes_a_result_or_an_error_that_says_why() {
    let seen = Seen::default();
    let base = http_server(seen.clone()).await;
    let env = |var: &str| (var == "ORDERS_TOKEN").then(|| "s3cret".to_owned());
    let agent = AgentSettings::from_toml_str(&agent_file(&base), &env).expect("a valid agent file");
    let metadata = json!({"customer": "7"}).as_object().unwrap().clone();
    let tools = WebhookTools::new(&agent.tools)
        .unwrap()
        .for_call("c-1", metadata);
    assert_eq!(tools.definitions().len(), 7);

    let ok = call(&tools, "ok").await;
    assert!(!ok.is_error, "{ok:?}");
    let result: Value = serde_json::from_str(&ok.content).unwrap();
    assert_eq!(result, json!({"order_id": "42", "status": "shipped"}));
    let (headers, body) = seen.lock().unwrap()[0].clone();
    assert_eq!(
        body,
        json!({"tool": "ok", "call_id": "c-1", "tool_call_id": "call_abc", "turn": 3,
               "arguments": {"order_id": "42"}, "metadata": {"customer": "7"}})
    );
    assert_eq!(headers["authorization"], "Bearer s3cret");
    assert_eq!(headers["x-brisvox-call-id"], "c-1");

    for (name, want) in [
        ("missing", "tool missing failed: HTTP 404: no such order"),
        ("broken", "tool broken failed: HTTP 500: database down"),
        ("never", "tool never timed out after 400 ms"),
        ("not_json", "tool not_json answered with invalid JSON"),
        ("huge", "tool huge answered more than 1000 bytes"),
    ] {
        let outcome = call(&tools, name).await;
        assert!(outcome.is_error, "{name}: {outcome:?}");
        let error: Value = serde_json::from_str(&outcome.content).unwrap();
        assert_eq!(error["error"], want, "{name}");
    }
    let empty = call(&tools, "empty").await;
    assert_eq!((empty.is_error, empty.content.as_str()), (false, "null"));
    let unknown = call(&tools, "nope").await;
    assert!(unknown.is_error && unknown.content.contains("unknown tool nope"));
}

#[tokio::test]
async fn an_unreachable_webhook_is_an_error_result() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let toml = agent_file(&base);
    let env = |_: &str| Some("t".to_owned());
    let agent = AgentSettings::from_toml_str(&toml, &env).unwrap();
    let tools = WebhookTools::new(&agent.tools)
        .unwrap()
        .for_call("c-1", Default::default());
    let outcome = call(&tools, "ok").await;
    assert_eq!(
        serde_json::from_str::<Value>(&outcome.content).unwrap()["error"],
        "tool ok could not be reached"
    );
}
