//! A panic inside one call's task ends that call only (#19, chaos): the
//! panicking call gets `error` `call_failed`, `end` `handler_error` and close
//! 1011, is counted as such, and frees its slot; a call running beside it
//! goes on echoing its audio and ends normally.

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_engine::CallSource as _;
use brisvox_server::handler::{CallFuture, CallHandler, CallStart, EchoCallHandler, RouteEdge};
use common::{Seen, Ws, send_binary, send_text};

/// Echoes every call, except that the call with id `boom` panics once its
/// first audio arrives.
struct PanicsOnBoom;

impl CallHandler for PanicsOnBoom {
    fn run_call(&self, start: CallStart, mut edge: RouteEdge) -> CallFuture {
        if start.call_id != "boom" {
            return EchoCallHandler.run_call(start, edge);
        }
        Box::pin(async move {
            let _ = edge.source.recv().await;
            panic!("injected panic in call boom");
        })
    }
}

fn start(call_id: &str) -> String {
    format!(
        r#"{{"type":"start","protocol_version":1,"codec":"pcm16","sample_rate":16000,"call_id":"{call_id}"}}"#
    )
}

/// Sends 20 ms of audio and waits for it to come back.
async fn echoes(ws: &mut Ws) {
    let pcm: Vec<u8> = (0..320i16).flat_map(|i| (i * 3).to_le_bytes()).collect();
    send_binary(ws, pcm.clone()).await;
    match common::next(ws).await {
        Seen::Audio(a) => assert_eq!(a, pcm),
        other => panic!("expected the echo, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_other_call_goes_on() {
    let srv = common::server_with("[limits]\nmax_calls = 2\n", Arc::new(PanicsOnBoom)).await;
    let addr = srv.local_addr();
    let mut calm = common::connect(addr, "/call").await;
    send_text(&mut calm, &start("calm")).await;
    assert_eq!(common::next_event(&mut calm).await["type"], "started");
    echoes(&mut calm).await;

    let mut boom = common::connect(addr, "/call").await;
    send_text(&mut boom, &start("boom")).await;
    assert_eq!(common::next_event(&mut boom).await["type"], "started");
    send_binary(&mut boom, vec![0u8; 640]).await;
    let (events, code) = common::until_close(&mut boom).await;
    let kinds: Vec<_> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["error", "end"], "{events:?}");
    assert_eq!(events[0]["code"], "call_failed");
    assert_eq!(events[1]["reason"], "handler_error");
    assert_eq!(code, Some(1011));
    common::wait_metric(addr, "brisvox_calls_total{outcome=\"handler_error\"} 1").await;

    // The calm call still works, and the panicking call's slot is free again
    // (max_calls = 2: a new call is admitted beside the calm one).
    echoes(&mut calm).await;
    let mut next = common::connect(addr, "/call").await;
    send_text(&mut next, &start("next")).await;
    assert_eq!(common::next_event(&mut next).await["type"], "started");
    echoes(&mut next).await;
    echoes(&mut calm).await;
    for ws in [&mut calm, &mut next] {
        send_text(ws, r#"{"type":"end"}"#).await;
        let (events, code) = common::until_close(ws).await;
        assert_eq!(events.last().unwrap()["reason"], "client_end");
        assert_eq!(code, Some(1000));
    }
    common::wait_metric(addr, "brisvox_calls_total{outcome=\"client_end\"} 2").await;
    srv.drain(Duration::from_millis(100)).await;
}
