//! Open sockets are bounded by what the file limit leaves once every call's
//! provider sockets are set aside: with the limit lowered, a flood of idle
//! connections fills the bound, the next connection is closed at once, and
//! the call in progress goes on; once the flood leaves, new clients are
//! served again.

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_server::handler::EchoCallHandler;
use brisvox_server::listener::max_connections_for;
use common::{Seen, send_binary, send_text};
use tokio::io::AsyncReadExt;

/// Waits until `f` holds, up to [`common::WAIT`].
async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + common::WAIT;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn echoes(ws: &mut common::Ws) {
    let pcm: Vec<u8> = (0..320i16).flat_map(|i| (i * 11).to_le_bytes()).collect();
    send_binary(ws, pcm.clone()).await;
    match common::next(ws).await {
        Seen::Audio(a) => assert_eq!(a, pcm, "the call echoes"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_flood_fills_the_bound_and_the_call_goes_on() {
    // One call; 3 fds set aside for it and 256 spare: a soft limit of 323
    // leaves the minimum bound of 64 sockets.
    let nofile = 323;
    let (_, hard) = rlimit::Resource::NOFILE.get().unwrap();
    rlimit::Resource::NOFILE.set(nofile, hard).unwrap();
    let bound = max_connections_for(nofile, 1);
    assert_eq!(bound, 64);
    let agent = "[limits]\nmax_calls = 1\n[server]\nheader_read_timeout_ms = 120000\n";
    let srv = common::server_with(agent, Arc::new(EchoCallHandler)).await;
    let addr = srv.local_addr();
    let stats = srv.connections().clone();

    let mut call = common::connect(addr, "/call").await;
    send_text(&mut call, common::START_PCM16).await;
    assert_eq!(common::next_event(&mut call).await["type"], "started");
    echoes(&mut call).await;

    let mut flood = Vec::new();
    for _ in 1..bound {
        flood.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    eventually("the bound is full", || stats.open() == bound as u64).await;
    let mut over = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(common::WAIT, over.read(&mut buf))
        .await
        .expect("closed at once")
        .unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
    assert_eq!(stats.refused(), 1);
    echoes(&mut call).await;

    drop(flood);
    eventually("the flood's sockets closed", || stats.open() == 1).await;
    assert_eq!(common::get(addr, "/healthz").await.0, 200);
    echoes(&mut call).await;
    srv.drain(Duration::from_secs(1)).await;
}
