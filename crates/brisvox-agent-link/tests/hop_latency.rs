//! Hop latency on loopback: 500 events, each answered at once by the Rust
//! reference agent with a command naming it (`re`), one at a time, over real
//! sockets on 127.0.0.1. The link measures each hop itself (event taken from
//! the call -> command parsed). Prints the figures; bench/results/agent-link-hop.md
//! keeps a run.
//!
//! `cargo test -p brisvox-agent-link --test hop_latency -- --nocapture`

mod support;

use std::time::Duration;

use brisvox_agent_link::{AgentLink, AgentLinkConfig, Command, Event};
use support::{reference_agent, say_to_transcripts, started};

const HOPS: u64 = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answered_event_is_one_hop_and_loopback_hops_are_short() {
    let (url, _seen) = reference_agent(say_to_transcripts, None).await;
    let (link, mut commands, task) = AgentLink::start(AgentLinkConfig::new(url), started());
    for i in 0..HOPS {
        link.event(Event::UserTranscript {
            text: format!("utterance {i}"),
            is_final: true,
        });
        let command = tokio::time::timeout(Duration::from_secs(10), commands.recv())
            .await
            .expect("the agent answers")
            .expect("the link runs");
        assert!(matches!(command.command, Command::Say { .. }));
    }
    link.end("hangup");
    let stats = task.await.unwrap();
    assert_eq!(stats.hops, HOPS);
    assert_eq!(stats.commands, HOPS);
    assert_eq!(stats.events_dropped, 0);
    let mean = stats.hop_mean().unwrap();
    let p50 = stats.hop_quantile(0.5).unwrap();
    let p99 = stats.hop_quantile(0.99).unwrap();
    println!(
        "agent link hop over {} hops (loopback, reference agent in Rust):",
        stats.hops
    );
    println!("| mean | p50 (bucket bound) | p99 (bucket bound) | max |");
    println!("|---|---|---|---|");
    println!(
        "| {} us | {} us | {} us | {} us |",
        mean.as_micros(),
        p50.as_micros(),
        p99.as_micros(),
        stats.hop_max_us
    );
    println!("buckets (upper bound us: hops): {:?}", bucket_table(&stats));
    // Loose bound: a loaded shared machine, debug build. The figure is printed.
    assert!(p50 < Duration::from_millis(20), "p50 {p50:?}");
}

fn bucket_table(stats: &brisvox_agent_link::LinkStats) -> Vec<(String, u64)> {
    let mut bounds: Vec<String> = brisvox_agent_link::HOP_BUCKETS_US
        .iter()
        .map(u64::to_string)
        .collect();
    bounds.push("over".to_owned());
    bounds
        .into_iter()
        .zip(stats.hop_buckets)
        .filter(|(_, n)| *n > 0)
        .collect()
}
