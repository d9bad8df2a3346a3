//! A log-normal latency has the configured median and spread over many draws,
//! in `Latency::sample` and in the delays the mocks draw per request.

use std::time::Duration;

use brisvox_providers::mock::{DetRng, Latency, MockLlm, MockLlmConfig, MockStt, MockSttConfig};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

#[test]
fn median_and_one_sigma_quantile_match_the_parameters() {
    for (median_ms, sigma) in [(150.0, 0.3), (350.0, 0.5), (30.0, 0.2)] {
        let latency = Latency::LogNormal { median_ms, sigma };
        let mut rng = DetRng::new(3);
        let draws: Vec<Duration> = (0..20_001).map(|_| latency.sample(&mut rng)).collect();
        let m = median(draws.clone());
        assert!(
            (m - median_ms).abs() <= median_ms * 0.03 + 1.0,
            "median {m} for {median_ms}"
        );
        // About 84.1 % of draws fall below median * e^sigma.
        let limit = median_ms * sigma.exp();
        let below = draws
            .iter()
            .filter(|d| d.as_secs_f64() * 1000.0 < limit)
            .count();
        let share = below as f64 / draws.len() as f64;
        assert!((share - 0.841).abs() < 0.02, "share below e^sigma: {share}");
    }
}

#[test]
fn the_mocks_draw_their_delays_around_the_median() {
    let llm = MockLlm::new(MockLlmConfig {
        seed: 17,
        first_token: Latency::LogNormal {
            median_ms: 350.0,
            sigma: 0.4,
        },
        ..MockLlmConfig::default()
    });
    let m = median((0..2_001).map(|i| llm.first_token_delay(i)).collect());
    assert!(
        (m - 350.0).abs() < 350.0 * 0.05,
        "LLM first token median {m}"
    );
    let stt = MockStt::new(MockSttConfig {
        seed: 17,
        final_latency: Latency::LogNormal {
            median_ms: 150.0,
            sigma: 0.4,
        },
        ..MockSttConfig::default()
    });
    let m = median((0..2_001).map(|i| stt.final_delay(i)).collect());
    assert!((m - 150.0).abs() < 150.0 * 0.05, "STT final median {m}");
}
