//! Each reason a call is refused for is a `reason` of its own in
//! `brisvox_calls_refused_total` (#19: full, pool pressure, Smart Turn
//! pressure, draining), and the refused client reads the same code in the
//! 503's body. The pressure here is the test's own [`PoolPressure`], switched
//! between the two pressures the shedding reports (`shedding.rs`), so every
//! reason is reached without overloading a model.

mod common;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use brisvox_server::admission::{PoolPressure, Refusal};
use brisvox_server::agent::AgentSettings;
use brisvox_server::handler::EchoCallHandler;
use brisvox_server::serve::{DrainPlan, ServerConfig, start};

/// The refusal the test asks admission for, if any.
#[derive(Clone, Default)]
struct Switch(Arc<Mutex<Option<Refusal>>>);

impl Switch {
    fn set(&self, refusal: Option<Refusal>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = refusal;
    }
}

impl PoolPressure for Switch {
    fn under_pressure(&self) -> bool {
        self.refusal(0).is_some()
    }

    fn refusal(&self, _active: usize) -> Option<Refusal> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn refused_with(addr: std::net::SocketAddr, code: &str) {
    let (status, body) = common::refused_upgrade(addr, "/call").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        (body["type"].as_str(), body["code"].as_str()),
        (Some("error"), Some(code))
    );
}

#[tokio::test]
async fn every_refusal_reason_is_counted_apart() {
    let switch = Switch::default();
    let toml = "[limits]\nmax_calls = 1\n";
    let agent = AgentSettings::from_toml_str(toml, &|_| None).unwrap();
    let srv = start(ServerConfig {
        agent: Arc::new(agent),
        bind: "127.0.0.1:0".parse().unwrap(),
        handler: Arc::new(EchoCallHandler),
        pressure: Box::new(switch.clone()),
        metrics: brisvox_server::metrics::ServerMetrics::new(),
        telemetry: None,
    })
    .await
    .unwrap();
    let addr = srv.local_addr();

    switch.set(Some(Refusal::SmartTurnPressure));
    common::eventually_get(addr, "/readyz", (503, "full\n")).await;
    refused_with(addr, "smart_turn_pressure").await;
    refused_with(addr, "smart_turn_pressure").await;
    switch.set(Some(Refusal::PoolPressure));
    refused_with(addr, "pool_pressure").await;
    switch.set(None);
    let mut call = common::connect(addr, "/call").await;
    common::send_text(&mut call, common::START_PCM16).await;
    assert_eq!(common::next_event(&mut call).await["type"], "started");
    refused_with(addr, "server_full").await;

    // Draining: the drain's admitting step is zero long, but until the
    // server has ended it a new call still meets the full server.
    let plan = DrainPlan {
        admit_for: Duration::ZERO,
        grace: Duration::from_secs(3600),
    };
    let drain = tokio::spawn(srv.drain_with(plan, std::future::pending()));
    common::eventually_get(addr, "/readyz", (503, "draining\n")).await;
    let mut full = 1;
    loop {
        let (status, body) = common::refused_upgrade(addr, "/call").await;
        assert_eq!(status, 503, "{body}");
        match body["code"].as_str() {
            Some("server_draining") => break,
            Some("server_full") => full += 1,
            other => panic!("refused as {other:?} while draining"),
        }
    }

    let metrics = common::wait_metric(
        addr,
        "brisvox_calls_refused_total{reason=\"server_draining\"} 1",
    )
    .await;
    for (reason, count) in [
        ("smart_turn_pressure", 2),
        ("pool_pressure", 1),
        ("server_full", full),
        ("server_draining", 1),
    ] {
        let line = format!("brisvox_calls_refused_total{{reason=\"{reason}\"}} {count}\n");
        assert!(metrics.contains(&line), "{line:?} missing in\n{metrics}");
    }
    common::send_text(&mut call, r#"{"type":"end"}"#).await;
    let report = tokio::time::timeout(common::WAIT, drain)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((report.calls_at_start, report.calls_ended), (1, 0));
}
