//! `brisvox check FILE --probe` makes one live request per vendor provider
//! through the real adapters (the file's base URLs point at local fakes of
//! Deepgram listen and Aura, an OpenAI-compatible server with chat
//! completions and transcriptions, Cartesia and ElevenLabs, each speaking its
//! documented protocol) and reports each: a good key passes with its timings
//! and audio rate; a refused key fails the check naming the stage and what to
//! check, and the key itself never appears. Every vendor provider kind is
//! probed with a good key and a refused one.
#![allow(clippy::result_large_err)] // tungstenite's handshake callback type

use std::process::Command;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

const GOOD: &str = "probe-key-GOOD";

/// How a websocket fake checks the key.
#[derive(Clone, Copy)]
struct Auth {
    /// The request header that carries it.
    header: &'static str,
    /// Its value for the good key (`Token …`, `Bearer …`, or the bare key).
    prefix: &'static str,
    /// `None`: a bad key is refused at the upgrade (401). `Some(reason)`: the
    /// upgrade succeeds and the first message is answered with a 1008 close
    /// with this reason (ElevenLabs' "Invalid API key").
    close_reason: Option<&'static str>,
    /// A query the upgrade's URL must carry (else 400), when set.
    query: Option<&'static str>,
}

/// Accepts websockets on paths starting with `path`; answers each text
/// message with `reply(message)`.
async fn ws_fake(
    auth: Auth,
    path: &'static str,
    reply: fn(&serde_json::Value) -> Vec<Message>,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let want = format!("{}{GOOD}", auth.prefix);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let want = want.clone();
            tokio::spawn(async move {
                let mut good = false;
                let check = |req: &Request, resp| {
                    good = req.headers().get(auth.header).and_then(|v| v.to_str().ok())
                        == Some(want.as_str());
                    let query = req.uri().query().unwrap_or_default();
                    let status = if !req.uri().path().starts_with(path) {
                        StatusCode::NOT_FOUND
                    } else if auth.query.is_some_and(|q| !query.contains(q)) {
                        StatusCode::BAD_REQUEST
                    } else if good || auth.close_reason.is_some() {
                        return Ok(resp);
                    } else {
                        StatusCode::UNAUTHORIZED
                    };
                    let mut e = ErrorResponse::new(Some("refused".into()));
                    *e.status_mut() = status;
                    Err(e)
                };
                let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, check).await else {
                    return;
                };
                while let Some(Ok(m)) = ws.next().await {
                    let Message::Text(t) = m else { continue };
                    if let (false, Some(reason)) = (good, auth.close_reason) {
                        let frame = CloseFrame {
                            code: 1008.into(),
                            reason: reason.into(),
                        };
                        let _ = ws.close(Some(frame)).await;
                        return;
                    }
                    let v: serde_json::Value = serde_json::from_str(&t).unwrap_or_default();
                    for out in reply(&v) {
                        let _ = ws.send(out).await;
                    }
                }
            });
        }
    });
    format!("ws://{addr}")
}

/// `n` samples of silence as base64 PCM s16le.
fn silence_b64(n: usize) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(vec![0u8; n * 2])
}

fn deepgram(m: &serde_json::Value) -> Vec<Message> {
    if m["type"] != "Finalize" {
        return vec![];
    }
    vec![
        serde_json::json!({"type": "Results", "is_final": true, "speech_final": false,
        "from_finalize": true, "start": 0.0, "duration": 0.3,
        "channel": {"alternatives": [{"transcript": "", "confidence": 0.0, "words": []}]}})
        .to_string()
        .into(),
    ]
}

fn cartesia(m: &serde_json::Value) -> Vec<Message> {
    let ctx = m["context_id"].clone();
    if m["continue"] == false {
        return vec![serde_json::json!({"type": "done", "done": true, "status_code": 206, "context_id": ctx}).to_string().into()];
    }
    // 0.1 s of silence at the asked rate.
    let rate = m["output_format"]["sample_rate"].as_u64().unwrap_or(24_000) as usize;
    let data = silence_b64(rate / 10);
    vec![serde_json::json!({"type": "chunk", "data": data, "done": false, "status_code": 206, "context_id": ctx}).to_string().into()]
}

/// ElevenLabs' multi-context socket as its reference's schema describes it:
/// `audio` (base64) tagged with `contextId` for each text, `isFinal` once the
/// context is closed.
fn elevenlabs(m: &serde_json::Value) -> Vec<Message> {
    let ctx = m["context_id"].clone();
    if m["close_context"] == true {
        return vec![
            serde_json::json!({"isFinal": true, "contextId": ctx})
                .to_string()
                .into(),
        ];
    }
    match m["text"].as_str() {
        Some(text) if !text.trim().is_empty() => vec![
            serde_json::json!({"audio": silence_b64(2_400), "isFinal": false, "contextId": ctx})
                .to_string()
                .into(),
        ],
        _ => vec![],
    }
}

/// Deepgram Aura's `/v1/speak`: binary linear16 then `Flushed` for a Flush
/// (the Flush page's reply).
fn aura(m: &serde_json::Value) -> Vec<Message> {
    if m["type"] != "Flush" {
        return vec![];
    }
    vec![
        Message::binary(vec![0u8; 4_800]),
        r#"{"type":"Flushed","sequence_id":0}"#.into(),
    ]
}

/// OpenAI's 401 for a refused key, `None` for the good one.
fn refused(headers: &HeaderMap) -> Option<Response> {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
    (auth != Some(&format!("Bearer {GOOD}"))).then(|| {
        Response::builder()
            .status(401)
            .body(r#"{"error":{"code":"invalid_api_key","type":"invalid_request_error"}}"#.into())
            .unwrap()
    })
}

/// Chat completions and transcriptions under one `/v1`.
async fn openai_fake() -> String {
    async fn transcriptions(headers: HeaderMap) -> Response {
        if let Some(refusal) = refused(&headers) {
            return refusal;
        }
        let form = headers.get("content-type").and_then(|v| v.to_str().ok());
        if !form.is_some_and(|f| f.starts_with("multipart/form-data")) {
            return Response::builder().status(400).body("".into()).unwrap();
        }
        // 300 ms of silence: no words (the reference's answer shape).
        Response::builder()
            .header("content-type", "application/json")
            .body(r#"{"text":""}"#.into())
            .unwrap()
    }
    async fn completions(headers: HeaderMap) -> Response {
        if let Some(refusal) = refused(&headers) {
            return refusal;
        }
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"OK\"}}]}\n\ndata: [DONE]\n\n";
        Response::builder()
            .header("content-type", "text/event-stream")
            .body(body.into())
            .unwrap()
    }
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(completions))
        .route(
            "/v1/audio/transcriptions",
            axum::routing::post(transcriptions),
        );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

/// The TTS vendor a probe run speaks to.
#[derive(Clone, Copy)]
enum Tts {
    Cartesia,
    ElevenLabs,
    Aura,
}

/// `[tts]` of the agent file for `tts`, its fake started.
async fn tts_section(tts: Tts) -> String {
    let (name, model, voice, url) = match tts {
        Tts::Cartesia => {
            let auth = Auth {
                header: "authorization",
                prefix: "Bearer ",
                close_reason: None,
                query: None,
            };
            let base = ws_fake(auth, "/tts/websocket", cartesia).await;
            (
                "cartesia",
                "sonic-3.5",
                "voice = \"voice-1\"\n",
                format!("{base}/tts/websocket"),
            )
        }
        Tts::ElevenLabs => {
            let auth = Auth {
                header: "xi-api-key",
                prefix: "",
                close_reason: Some("Invalid API key"),
                query: None,
            };
            let path = "/v1/text-to-speech/voice-1/multi-stream-input";
            let base = ws_fake(auth, path, elevenlabs).await;
            (
                "elevenlabs",
                "eleven_flash_v2_5",
                "voice = \"voice-1\"\n",
                base,
            )
        }
        Tts::Aura => {
            let auth = Auth {
                header: "authorization",
                prefix: "Token ",
                close_reason: None,
                query: None,
            };
            let base = ws_fake(auth, "/v1/speak", aura).await;
            (
                "deepgram_aura",
                "aura-2-thalia-en",
                "",
                format!("{base}/v1/speak"),
            )
        }
    };
    format!(
        "[tts]\nprovider = \"{name}\"\n[tts.{name}]\nmodel = \"{model}\"\n{voice}api_key = \"${{TTS_KEY}}\"\nbase_url = \"{url}\"\n"
    )
}

/// The STT vendor a probe run speaks to.
#[derive(Clone, Copy)]
enum Stt {
    Deepgram,
    OpenAiTranscribe,
}

/// `[stt]` of the agent file for `stt`, its fake started (`openai` is the
/// OpenAI fake's `/v1` root).
async fn stt_section(stt: Stt, openai: &str) -> String {
    match stt {
        Stt::Deepgram => {
            // The agent file's keyterms must reach the upgrade's URL.
            let auth = Auth {
                header: "authorization",
                prefix: "Token ",
                close_reason: None,
                query: Some("keyterm=brisvox"),
            };
            let dg = ws_fake(auth, "/v1/listen", deepgram).await;
            format!(
                "[stt]\nprovider = \"deepgram\"\n[stt.deepgram]\napi_key = \"${{STT_KEY}}\"\nbase_url = \"{dg}/v1/listen\"\nkeyterms = [\"brisvox\"]\n"
            )
        }
        Stt::OpenAiTranscribe => format!(
            "[stt]\nprovider = \"openai_transcribe\"\n[stt.openai_transcribe]\nmodel = \"gpt-4o-transcribe\"\napi_key = \"${{STT_KEY}}\"\nbase_url = \"{openai}\"\n"
        ),
    }
}

async fn run_probe(llm_key: &str, tts: Tts, tts_key: &str) -> (bool, String) {
    run_probe_with(Stt::Deepgram, GOOD, llm_key, tts, tts_key).await
}

async fn run_probe_with(
    stt: Stt,
    stt_key: &str,
    llm_key: &str,
    tts: Tts,
    tts_key: &str,
) -> (bool, String) {
    let oai = openai_fake().await;
    let stt = stt_section(stt, &oai).await;
    let tts = tts_section(tts).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent.toml");
    std::fs::write(
        &file,
        format!(
            "{stt}[llm]\nprovider = \"openai_compatible\"\n[llm.openai_compatible]\nmodel = \"gpt-4o-mini\"\napi_key = \"${{LLM_KEY}}\"\nbase_url = \"{oai}\"\n{tts}"
        ),
    )
    .unwrap();
    let (stt_key, llm_key, tts_key) = (stt_key.to_owned(), llm_key.to_owned(), tts_key.to_owned());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_brisvox"))
            .args(["check", "--probe", "--probe-timeout-s", "10"])
            .arg(&file)
            .env("STT_KEY", stt_key)
            .env("TTS_KEY", tts_key)
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
    let (ok, text) = run_probe(GOOD, Tts::Cartesia, GOOD).await;
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
    let (ok, text) = run_probe(bad, Tts::Cartesia, GOOD).await;
    assert!(!ok, "{text}");
    let llm = line(&text, "llm  openai_compatible");
    assert!(
        llm.contains("FAILED") && llm.contains("check the API key"),
        "{text}"
    );
    assert!(line(&text, "tts  cartesia").contains("ok:"), "{text}");
    assert!(!text.contains(bad) && !text.contains(GOOD), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elevenlabs_speaks_with_a_good_key_and_a_bad_key_names_the_tts_stage() {
    let (ok, text) = run_probe(GOOD, Tts::ElevenLabs, GOOD).await;
    assert!(ok, "{text}");
    let tts = line(&text, "tts  elevenlabs");
    assert!(
        tts.contains("ok: first audio in") && tts.contains("24000 Hz as asked"),
        "{text}"
    );
    assert!(!text.contains(GOOD), "{text}");

    let bad = "probe-key-BAD";
    let (ok, text) = run_probe(GOOD, Tts::ElevenLabs, bad).await;
    assert!(!ok, "{text}");
    let tts = line(&text, "tts  elevenlabs");
    assert!(
        tts.contains("FAILED") && tts.contains("check the API key"),
        "{text}"
    );
    assert!(
        line(&text, "llm  openai_compatible").contains("ok:"),
        "{text}"
    );
    assert!(!text.contains(bad) && !text.contains(GOOD), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deepgram_aura_speaks_with_a_good_key_and_a_refused_key_names_the_tts_stage() {
    let (ok, text) = run_probe(GOOD, Tts::Aura, GOOD).await;
    assert!(ok, "{text}");
    let tts = line(&text, "tts  deepgram_aura");
    assert!(
        tts.contains("ok: first audio in") && tts.contains("24000 Hz as asked"),
        "{text}"
    );
    let bad = "probe-key-BAD";
    let (ok, text) = run_probe(GOOD, Tts::Aura, bad).await;
    assert!(!ok, "{text}");
    let tts = line(&text, "tts  deepgram_aura");
    assert!(
        tts.contains("FAILED") && tts.contains("check the API key"),
        "{text}"
    );
    assert!(!text.contains(bad) && !text.contains(GOOD), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_transcription_answers_with_a_good_key_and_a_refused_key_names_the_stt_stage() {
    let (ok, text) = run_probe_with(Stt::OpenAiTranscribe, GOOD, GOOD, Tts::Cartesia, GOOD).await;
    assert!(ok, "{text}");
    assert!(
        line(&text, "stt  openai_transcribe").contains("ok: session opened"),
        "{text}"
    );
    let bad = "probe-key-BAD";
    let (ok, text) = run_probe_with(Stt::OpenAiTranscribe, bad, GOOD, Tts::Cartesia, GOOD).await;
    assert!(!ok, "{text}");
    let stt = line(&text, "stt  openai_transcribe");
    assert!(
        stt.contains("FAILED") && stt.contains("check the API key"),
        "{text}"
    );
    assert!(line(&text, "tts  cartesia").contains("ok:"), "{text}");
    assert!(!text.contains(bad) && !text.contains(GOOD), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_deepgram_and_cartesia_keys_name_their_stages() {
    let bad = "probe-key-BAD";
    let (ok, text) = run_probe_with(Stt::Deepgram, bad, GOOD, Tts::Cartesia, bad).await;
    assert!(!ok, "{text}");
    for stage in ["stt  deepgram", "tts  cartesia"] {
        let l = line(&text, stage);
        assert!(
            l.contains("FAILED") && l.contains("check the API key"),
            "{text}"
        );
    }
    assert!(
        line(&text, "llm  openai_compatible").contains("ok:"),
        "{text}"
    );
    assert!(!text.contains(bad) && !text.contains(GOOD), "{text}");
}
