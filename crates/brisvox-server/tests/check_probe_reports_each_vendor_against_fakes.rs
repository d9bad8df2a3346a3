//! `brisvox check FILE --probe` makes one live request per vendor provider
//! through the real adapters (the file's base URLs point at local fakes of
//! Deepgram, an OpenAI-compatible server and Cartesia that speak their
//! documented protocols) and reports each: a good key passes with its
//! timings and audio rate; a refused key fails the check naming the stage
//! and what to check, and the key itself never appears.
#![allow(clippy::result_large_err)] // tungstenite's handshake callback type

use std::process::Command;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request};

const GOOD: &str = "probe-key-GOOD";

/// Accepts websockets whose `authorization` header is `want`; answers each
/// text message with `reply(message)`.
async fn ws_fake(want: String, reply: fn(&serde_json::Value) -> Vec<String>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let want = want.clone();
            tokio::spawn(async move {
                let check = |req: &Request, resp| {
                    let auth = req
                        .headers()
                        .get("authorization")
                        .and_then(|v| v.to_str().ok());
                    if auth == Some(want.as_str()) {
                        Ok(resp)
                    } else {
                        let mut e = ErrorResponse::new(Some("refused".into()));
                        *e.status_mut() = StatusCode::UNAUTHORIZED;
                        Err(e)
                    }
                };
                let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, check).await else {
                    return;
                };
                while let Some(Ok(m)) = ws.next().await {
                    let Message::Text(t) = m else { continue };
                    let v: serde_json::Value = serde_json::from_str(&t).unwrap_or_default();
                    for out in reply(&v) {
                        let _ = ws.send(Message::text(out)).await;
                    }
                }
            });
        }
    });
    format!("ws://{addr}")
}

fn deepgram(m: &serde_json::Value) -> Vec<String> {
    if m["type"] != "Finalize" {
        return vec![];
    }
    vec![
        serde_json::json!({"type": "Results", "is_final": true, "speech_final": false,
        "from_finalize": true, "start": 0.0, "duration": 0.3,
        "channel": {"alternatives": [{"transcript": "", "confidence": 0.0, "words": []}]}})
        .to_string(),
    ]
}

fn cartesia(m: &serde_json::Value) -> Vec<String> {
    let ctx = m["context_id"].clone();
    if m["continue"] == false {
        return vec![serde_json::json!({"type": "done", "done": true, "status_code": 206, "context_id": ctx}).to_string()];
    }
    // 0.1 s of silence at the asked rate, base64 PCM s16le.
    let rate = m["output_format"]["sample_rate"].as_u64().unwrap_or(24_000) as usize;
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(vec![0u8; rate / 10 * 2]);
    vec![serde_json::json!({"type": "chunk", "data": data, "done": false, "status_code": 206, "context_id": ctx}).to_string()]
}

async fn openai_fake() -> String {
    async fn completions(headers: HeaderMap) -> Response {
        let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
        if auth != Some(&format!("Bearer {GOOD}")) {
            return Response::builder()
                .status(401)
                .body(
                    r#"{"error":{"code":"invalid_api_key","type":"invalid_request_error"}}"#.into(),
                )
                .unwrap();
        }
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"OK\"}}]}\n\ndata: [DONE]\n\n";
        Response::builder()
            .header("content-type", "text/event-stream")
            .body(body.into())
            .unwrap()
    }
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(completions));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

async fn run_probe(llm_key: &str) -> (bool, String) {
    let dg = ws_fake(format!("Token {GOOD}"), deepgram).await;
    let car = ws_fake(format!("Bearer {GOOD}"), cartesia).await;
    let oai = openai_fake().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent.toml");
    std::fs::write(
        &file,
        format!(
            "[stt]\nprovider = \"deepgram\"\n[stt.deepgram]\napi_key = \"${{DG_KEY}}\"\nbase_url = \"{dg}/v1/listen\"\n\
             [llm]\nprovider = \"openai_compatible\"\n[llm.openai_compatible]\nmodel = \"gpt-4o-mini\"\napi_key = \"${{LLM_KEY}}\"\nbase_url = \"{oai}\"\n\
             [tts]\nprovider = \"cartesia\"\n[tts.cartesia]\nmodel = \"sonic-3.5\"\nvoice = \"voice-1\"\napi_key = \"${{CAR_KEY}}\"\nbase_url = \"{car}\"\n"
        ),
    )
    .unwrap();
    let llm_key = llm_key.to_owned();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_brisvox"))
            .args(["check", "--probe", "--probe-timeout-s", "10"])
            .arg(&file)
            .env("DG_KEY", GOOD)
            .env("CAR_KEY", GOOD)
            .env("LLM_KEY", llm_key)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn line<'a>(text: &'a str, stage: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(stage))
        .unwrap_or_else(|| panic!("no {stage} line in {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn good_keys_pass_with_timings_and_rate() {
    let (ok, text) = run_probe(GOOD).await;
    assert!(ok, "{text}");
    assert!(
        line(&text, "stt  deepgram").contains("ok: session opened"),
        "{text}"
    );
    assert!(
        line(&text, "llm  openai_compatible").contains("ok: first token in"),
        "{text}"
    );
    let tts = line(&text, "tts  cartesia");
    assert!(
        tts.contains("ok: first audio in") && tts.contains("24000 Hz as asked"),
        "{text}"
    );
    assert!(!text.contains(GOOD), "the key must not be printed: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_fails_the_check_and_names_the_stage() {
    let bad = "probe-key-BAD";
    let (ok, text) = run_probe(bad).await;
    assert!(!ok, "{text}");
    let llm = line(&text, "llm  openai_compatible");
    assert!(
        llm.contains("FAILED") && llm.contains("check the API key"),
        "{text}"
    );
    assert!(line(&text, "tts  cartesia").contains("ok:"), "{text}");
    assert!(!text.contains(bad) && !text.contains(GOOD), "{text}");
}
