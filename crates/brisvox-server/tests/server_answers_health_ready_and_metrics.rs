//! The server started in-process answers /healthz, /readyz and /metrics.

mod common;

#[tokio::test]
async fn health_ready_metrics() {
    let srv = common::server().await;
    let addr = srv.local_addr();
    assert_eq!(
        common::get(addr, "/healthz").await,
        (200, "ok\n".to_owned())
    );
    assert_eq!(
        common::get(addr, "/readyz").await,
        (200, "ready\n".to_owned())
    );
    let (status, body) = common::get(addr, "/metrics").await;
    assert_eq!(status, 200);
    for name in [
        "brisvox_active_calls 0",
        "# TYPE brisvox_turn_response_latency_seconds histogram",
        "# TYPE brisvox_turn_time_to_silence_seconds histogram",
        "brisvox_audio_underruns_total 0",
        "brisvox_webrtc_filled_frames_total 0",
        "# TYPE brisvox_provider_errors_total counter",
        "# TYPE brisvox_llm_tokens_total counter",
        "# TYPE brisvox_build_info gauge",
    ] {
        assert!(body.contains(name), "{name} missing in\n{body}");
    }
    assert_eq!(common::get(addr, "/nope").await.0, 404);
    srv.drain(std::time::Duration::from_secs(1)).await;
}
