//! A connection that sends its request head slower than
//! `[server] header_read_timeout_ms` is disconnected (slow-header floods),
//! while other clients are served meanwhile.

mod common;

use std::sync::Arc;
use std::time::Instant;

use brisvox_server::handler::EchoCallHandler;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn a_head_that_never_ends_is_cut_at_the_deadline() {
    let agent = "[server]\nheader_read_timeout_ms = 300\n";
    let srv = common::server_with(agent, Arc::new(EchoCallHandler)).await;
    let addr = srv.local_addr();
    let began = Instant::now();
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        .await
        .unwrap();
    assert_eq!(
        common::get(addr, "/healthz").await.0,
        200,
        "others are served"
    );
    let mut answer = Vec::new();
    let read = tokio::time::timeout(common::WAIT, slow.read_to_end(&mut answer))
        .await
        .expect("the server closed the slow connection");
    let cut_after = began.elapsed();
    assert!(read.is_ok() || answer.is_empty(), "{read:?}");
    let text = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || text.starts_with("HTTP/1.1 408"),
        "nothing or a 408 before the close: {text}"
    );
    assert!(
        cut_after.as_millis() >= 300,
        "not before its deadline: {cut_after:?}"
    );
    srv.drain(std::time::Duration::from_secs(1)).await;
}
