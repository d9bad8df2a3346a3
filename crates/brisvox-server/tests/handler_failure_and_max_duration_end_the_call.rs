//! A failing handler ends the call with `error` `call_failed`, `end`
//! `handler_error` and close 1011; a call past `limits.max_call_duration_s` is
//! ended by the engine (the call's one length limit) with `end` `max_duration`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_server::handler::{CallFailed, CallFuture, CallHandler, CallStart, RouteEdge};

struct Failing;

impl CallHandler for Failing {
    fn run_call(&self, _: CallStart, _: RouteEdge) -> CallFuture {
        Box::pin(async {
            Err(CallFailed {
                reason: "the LLM refused the key".into(),
            })
        })
    }
}

#[tokio::test]
async fn failing_handler() {
    let srv = common::server_with("", Arc::new(Failing)).await;
    let mut ws = common::connect(srv.local_addr(), "/call").await;
    common::send_text(&mut ws, common::START_PCM16).await;
    let (events, code) = common::until_close(&mut ws).await;
    let kinds: Vec<_> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["started", "error", "end"], "{events:?}");
    assert_eq!(events[1]["code"], "call_failed");
    assert!(
        events[1]["message"]
            .as_str()
            .unwrap()
            .contains("LLM refused")
    );
    assert_eq!(events[2]["reason"], "handler_error");
    assert_eq!(code, Some(1011));
    common::wait_metric(
        srv.local_addr(),
        "brisvox_calls_total{outcome=\"handler_error\"} 1",
    )
    .await;
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn max_call_duration() {
    let srv = common::engine_server("", "[limits]\nmax_call_duration_s = 1", None).await;
    let mut ws = common::connect(srv.local_addr(), "/call").await;
    let t0 = tokio::time::Instant::now();
    common::send_text(&mut ws, common::START_PCM16).await;
    let (events, code) = common::until_close(&mut ws).await;
    assert_eq!(
        events.last().unwrap()["reason"],
        "max_duration",
        "{events:?}"
    );
    assert_eq!(code, Some(1000));
    // Not before the limit (a lower bound holds on any machine; the reason
    // above says why it ended).
    let took = t0.elapsed();
    assert!(took >= Duration::from_secs(1), "{took:?}");
    srv.drain(Duration::from_millis(100)).await;
}
