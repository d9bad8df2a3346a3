//! The browser demo page, served at `/`.
//!
//! Plain HTML, JavaScript and CSS under `assets/demo/`, embedded in the binary
//! with `include_str!` (no CDN, no build step). The page calls over WebRTC
//! (`/webrtc/offer`: the microphone's track out, the bot's track played by the
//! browser, events and controls on a data channel), or over the websocket
//! `/call` as the fallback (no WebRTC in the browser, a WebRTC call that
//! cannot be set up, or `?transport=ws`): an AudioWorklet sends 20 ms PCM16
//! frames at 16 kHz and a second one plays the bot's audio through a small
//! jitter buffer that a `clear` event empties at once. Both feed one event
//! handler: the live transcript, a latency bar per turn from `turn_metrics`,
//! and a banner when the server runs mock providers. `docs/DEMO.md` tells how
//! to use it.
//!
//! Routes: `/` (the page) and `/demo/{app.js, capture-worklet.js,
//! playback-worklet.js, style.css}`. They carry no secret and need no token;
//! the page passes its own `?token=` on to the call's route when it is guarded.

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

/// The page.
pub const INDEX_HTML: &str = include_str!("../assets/demo/index.html");
/// The page's script.
pub const APP_JS: &str = include_str!("../assets/demo/app.js");
/// The microphone worklet: resampling to 16 kHz, 20 ms PCM16 frames.
pub const CAPTURE_WORKLET_JS: &str = include_str!("../assets/demo/capture-worklet.js");
/// The playback worklet: jitter buffer flushed on `clear` (websocket), or a
/// meter on the WebRTC track.
pub const PLAYBACK_WORKLET_JS: &str = include_str!("../assets/demo/playback-worklet.js");
/// The page's style sheet.
pub const STYLE_CSS: &str = include_str!("../assets/demo/style.css");

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// The demo's routes, to merge into the server's router.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| asset(HTML, INDEX_HTML)))
        .route("/demo/app.js", get(|| asset(JS, APP_JS)))
        .route(
            "/demo/capture-worklet.js",
            get(|| asset(JS, CAPTURE_WORKLET_JS)),
        )
        .route(
            "/demo/playback-worklet.js",
            get(|| asset(JS, PLAYBACK_WORKLET_JS)),
        )
        .route("/demo/style.css", get(|| asset(CSS, STYLE_CSS)))
}

async fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
}
