//! `GET /` serves the demo page as HTML; its script calls over WebRTC
//! (`/webrtc/offer`) with `/call` as the fallback, and every asset the page
//! and script load is served with its content type.

mod common;

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// GET `path`; returns (status, content type, body).
async fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8(buf).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_default();
    (status, content_type, body.to_owned())
}

/// The `/demo/...` paths quoted in `text`.
fn demo_assets(text: &str) -> Vec<String> {
    text.split(['"', '\''])
        .filter(|s| s.starts_with("/demo/") && !s.contains(' '))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn the_page_and_its_assets_are_served() {
    let srv = common::server().await;
    let addr = srv.local_addr();

    let (status, content_type, page) = get(addr, "/").await;
    assert_eq!(status, 200);
    assert_eq!(content_type, "text/html; charset=utf-8");
    assert!(page.starts_with("<!doctype html>"), "{page}");
    assert!(page.contains("/call"), "the page names /call");
    assert!(
        page.contains("/webrtc/offer"),
        "the page names /webrtc/offer"
    );
    assert!(
        page.contains("id=\"transport\""),
        "the page shows its transport"
    );
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "no CDN"
    );

    let (status, content_type, script) = get(addr, "/demo/app.js").await;
    assert_eq!(
        (status, content_type.as_str()),
        (200, "text/javascript; charset=utf-8")
    );
    for needle in [
        "'/call'",
        "type: 'start'",
        "'/webrtc/offer'",
        "createDataChannel(",
        "echoCancellation: true",
        "'Content-Type': 'application/json'",
        "'clear'",
        "'turn_metrics'",
        "ev.mock",
    ] {
        assert!(script.contains(needle), "app.js lacks {needle}");
    }

    let mut assets = demo_assets(&page);
    assets.extend(demo_assets(&script));
    for needed in [
        "/demo/app.js",
        "/demo/style.css",
        "/demo/capture-worklet.js",
        "/demo/playback-worklet.js",
    ] {
        assert!(assets.iter().any(|a| a == needed), "{needed} is not loaded");
    }
    for path in &assets {
        let (status, content_type, body) = get(addr, path).await;
        assert_eq!(status, 200, "{path}");
        let want = if path.ends_with(".css") {
            "text/css"
        } else {
            "text/javascript"
        };
        assert!(content_type.starts_with(want), "{path}: {content_type}");
        assert!(!body.is_empty(), "{path} is empty");
    }
    srv.drain(std::time::Duration::from_secs(1)).await;
}
