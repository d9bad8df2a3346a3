//! `/readyz` turns false when the server is full or draining; a call over the
//! limit is refused with `server_full`; a drain waits for calls up to the grace,
//! then ends them with `end` `server_draining` and close 1001.

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_server::handler::EchoCallHandler;
use common::send_text;

#[tokio::test]
async fn full_then_draining() {
    let srv = common::server_with("[limits]\nmax_calls = 1", Arc::new(EchoCallHandler)).await;
    let addr = srv.local_addr();
    let mut first = common::connect(addr, "/call").await;
    send_text(&mut first, common::START_PCM16).await;
    assert_eq!(common::next_event(&mut first).await["type"], "started");
    assert_eq!(
        common::get(addr, "/readyz").await,
        (503, "full\n".to_owned())
    );

    let mut second = common::connect(addr, "/call").await;
    let (events, code) = common::until_close(&mut second).await;
    assert_eq!(events[0]["code"], "server_full");
    assert_eq!(code, Some(1013));

    let drain = tokio::spawn(srv.drain(Duration::from_millis(300)));
    let deadline = tokio::time::Instant::now() + common::WAIT;
    while common::get(addr, "/readyz").await != (503, "draining\n".to_owned()) {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (events, code) = common::until_close(&mut first).await;
    assert_eq!(
        events.last().unwrap()["reason"],
        "server_draining",
        "{events:?}"
    );
    assert_eq!(code, Some(1001));
    let report = tokio::time::timeout(common::WAIT, drain)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((report.calls_at_start, report.calls_ended), (1, 1));
}

#[tokio::test]
async fn a_drain_with_no_calls_is_immediate() {
    let srv = common::server().await;
    let t0 = tokio::time::Instant::now();
    let report = srv.drain(Duration::from_secs(30)).await;
    assert_eq!((report.calls_at_start, report.calls_ended), (0, 0));
    assert!(t0.elapsed() < Duration::from_secs(5));
}
