//! A client that vanishes mid-call (no `end`, no close frame) does not panic the
//! server: the call's slot is freed and counted as disconnected.

mod common;

use brisvox_testkit::eventually_async;
use common::{START_PCM16, send_binary, send_text};

#[tokio::test]
async fn dropped_socket_mid_call() {
    let srv = common::server_with(
        "[limits]\nmax_calls = 1",
        std::sync::Arc::new(brisvox_server::handler::EchoCallHandler),
    )
    .await;
    let addr = srv.local_addr();
    for _ in 0..3 {
        let mut ws = common::connect(addr, "/call").await;
        send_text(&mut ws, START_PCM16).await;
        assert_eq!(common::next_event(&mut ws).await["type"], "started");
        send_binary(&mut ws, vec![7; 1000]).await;
        drop(ws); // TCP closed without a websocket close
        // The single slot comes back, so the next iteration is admitted.
        eventually_async(common::WAIT, "the slot is freed", || async {
            common::get(addr, "/readyz").await.0 == 200
        })
        .await;
    }
    common::wait_metric(addr, "brisvox_calls_total{outcome=\"disconnected\"} 3").await;
    srv.drain(std::time::Duration::from_secs(1)).await;
}
