//! `/readyz` turns false when the server is full or draining; a call over the
//! limit is refused before the upgrade (HTTP 503, `server_full`); a drain waits
//! for calls up to the grace, then ends them with `end` `server_draining` and
//! close 1001; during a drain's admitting step readiness is already false but
//! calls are still taken, then they are refused with `server_draining`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_server::handler::EchoCallHandler;
use brisvox_testkit::eventually_some_async;
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

    let (status, body) = common::refused_upgrade(addr, "/call").await;
    assert_eq!(status, 503);
    assert_eq!(
        (body["type"].as_str(), body["code"].as_str()),
        (Some("error"), Some("server_full"))
    );
    assert!(
        common::wait_metric(
            addr,
            "brisvox_calls_refused_total{reason=\"server_full\"} 1"
        )
        .await
        .contains("server_full"),
    );

    let drain = tokio::spawn(srv.drain(Duration::from_millis(300)));
    common::eventually_get(addr, "/readyz", (503, "draining\n")).await;
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
    let grace = Duration::from_secs(60);
    let t0 = tokio::time::Instant::now();
    let report = srv.drain(grace).await;
    assert_eq!((report.calls_at_start, report.calls_ended), (0, 0));
    // It did not wait out the grace (a bound from the behaviour, not from the
    // machine's speed).
    assert!(t0.elapsed() < grace);
}

#[tokio::test]
async fn a_drain_admits_while_the_balancer_catches_up_then_refuses() {
    let srv = common::server().await;
    let addr = srv.local_addr();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let plan = brisvox_server::serve::DrainPlan {
        admit_for: Duration::from_secs(3600),
        grace: Duration::from_secs(3600),
    };
    // `end_now` stands for the second signal; here it ends the test's drain.
    let drain = tokio::spawn(srv.drain_with(plan, async move {
        let _ = go_rx.await;
    }));
    common::eventually_get(addr, "/readyz", (503, "draining\n")).await;
    let mut late = common::connect(addr, "/call").await;
    send_text(&mut late, common::START_PCM16).await;
    assert_eq!(common::next_event(&mut late).await["type"], "started");
    go_tx.send(()).unwrap();
    let (events, code) = common::until_close(&mut late).await;
    assert_eq!(events.last().unwrap()["reason"], "server_draining");
    assert_eq!(code, Some(1001));
    let report = tokio::time::timeout(common::WAIT, drain)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((report.calls_at_start, report.calls_ended), (0, 1));
}

#[tokio::test]
async fn after_the_admitting_step_a_new_call_is_refused_as_draining() {
    let srv = common::server().await;
    let addr = srv.local_addr();
    let mut running = common::connect(addr, "/call").await;
    send_text(&mut running, common::START_PCM16).await;
    assert_eq!(common::next_event(&mut running).await["type"], "started");
    let plan = brisvox_server::serve::DrainPlan {
        admit_for: Duration::ZERO,
        grace: Duration::from_secs(3600),
    };
    let drain = tokio::spawn(srv.drain_with(plan, std::future::pending()));
    common::eventually_get(addr, "/readyz", (503, "draining\n")).await;
    let body = eventually_some_async(common::WAIT, "a call is refused", || async {
        match tokio_tungstenite::connect_async(format!("ws://{addr}/call")).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
                assert_eq!(r.status().as_u16(), 503);
                let body = r.body().as_deref().unwrap();
                Some(serde_json::from_slice::<serde_json::Value>(body).unwrap())
            }
            // The admitting step (zero long) has not ended on the server yet.
            Ok(_) => None,
            Err(e) => panic!("{e}"),
        }
    })
    .await;
    assert_eq!(body["code"], "server_draining");
    send_text(&mut running, r#"{"type":"end"}"#).await;
    let report = tokio::time::timeout(common::WAIT, drain)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((report.calls_at_start, report.calls_ended), (1, 0));
}
