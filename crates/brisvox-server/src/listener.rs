//! The accept loop: what every TCP connection gets before any route sees it.
//!
//! Rules (what `axum::serve` does not do, and a flood needs):
//!
//! 1. **A deadline on the request head.** A connection that has not sent a
//!    whole request head within `header_read_timeout` is closed (slow-header
//!    floods; hyper's HTTP/1 timer, which `axum::serve` leaves unset).
//! 2. **A bound on open sockets.** At most `max_connections` accepted sockets
//!    are open at once, counting websockets after their upgrade until they
//!    close (the place is held by the socket itself, [`CountedStream`]). A
//!    connection over the bound is closed at once, so a flood cannot take
//!    the file descriptors that running calls need for their providers.
//!    `[server] max_connections` sets the bound; by default
//!    [`max_connections_for`] derives it from the process's file limit.
//! 3. **The peer address** reaches the routes as axum's
//!    `ConnectInfo<SocketAddr>` (the failed-auth limiter keys on it).
//! 4. **Shutdown** stops accepting, asks every HTTP connection to finish its
//!    request and close, and returns once they have; upgraded websockets
//!    belong to their calls (the drain ends them).
//!
//! Idle websockets that never send `start` are closed by the routes' own
//! start timeout.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tower::ServiceExt as _;

/// Default deadline for a whole request head, in milliseconds.
pub const DEFAULT_HEADER_READ_TIMEOUT_MS: u32 = 10_000;

/// File descriptors kept free of client connections: per call for its
/// provider sockets (STT, LLM, TTS), and a fixed margin for model files,
/// logs and the runtime.
const FDS_PER_CALL: u64 = 3;
const FDS_MARGIN: u64 = 256;

/// Fewest connections the bound allows, whatever the file limit.
const MIN_CONNECTIONS: usize = 64;

/// How long a failed `accept` (out of file descriptors, say) pauses the loop.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// The connection rules' settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Deadline for a whole request head (rule 1).
    pub header_read_timeout: Duration,
    /// Most sockets open at once (rule 2).
    pub max_connections: usize,
}

/// The bound of rule 2 for a process allowed `nofile` open files that runs
/// up to `max_calls` calls: what is left once every call's provider sockets
/// and a margin are set aside, and at least [`MIN_CONNECTIONS`].
pub fn max_connections_for(nofile: u64, max_calls: usize) -> usize {
    let reserved = FDS_MARGIN + FDS_PER_CALL * max_calls as u64;
    let left = usize::try_from(nofile.saturating_sub(reserved)).unwrap_or(usize::MAX);
    left.clamp(MIN_CONNECTIONS, Semaphore::MAX_PERMITS)
}

/// Counters of the accept loop, shared with `/metrics`.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    /// Sockets open now (HTTP and upgraded websockets).
    open: AtomicU64,
    /// Connections closed at once because the bound was reached.
    refused: AtomicU64,
}

impl ConnectionStats {
    /// Sockets open now.
    pub fn open(&self) -> u64 {
        self.open.load(Ordering::Relaxed)
    }

    /// Connections refused at the bound so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// A socket that holds its place under the bound until it is dropped,
/// whoever owns it then (hyper, or the websocket after the upgrade).
#[derive(Debug)]
struct CountedStream {
    inner: TcpStream,
    _place: OwnedSemaphorePermit,
    stats: Arc<ConnectionStats>,
}

impl Drop for CountedStream {
    fn drop(&mut self) {
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl AsyncRead for CountedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for CountedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Serves `app` on `listener` by the module's rules until `shutdown`
/// resolves (rule 4).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    stats: Arc<ConnectionStats>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let places = Arc::new(Semaphore::new(limits.max_connections));
    let (closing_tx, closing_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            // Reap finished connections so the set stays as large as the
            // connections open.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                continue;
            }
        };
        let Ok(place) = Arc::clone(&places).try_acquire_owned() else {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            continue;
        };
        stats.open.fetch_add(1, Ordering::Relaxed);
        let io = CountedStream {
            inner: stream,
            _place: place,
            stats: Arc::clone(&stats),
        };
        connections.spawn(connection(
            io,
            peer,
            app.clone(),
            limits,
            closing_rx.clone(),
        ));
    }
    let _ = closing_tx.send(true);
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// One HTTP/1 connection (rules 1, 3 and 4).
async fn connection(
    io: CountedStream,
    peer: SocketAddr,
    app: Router,
    limits: ConnectionLimits,
    mut closing: watch::Receiver<bool>,
) {
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        app.clone().oneshot(req.map(axum::body::Body::new))
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let conn = builder
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    let mut conn = std::pin::pin!(conn);
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            Ok(()) = closing.changed() => conn.as_mut().graceful_shutdown(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_leaves_room_for_every_calls_providers() {
        assert_eq!(max_connections_for(20_000, 100), 20_000 - 256 - 300);
        assert_eq!(max_connections_for(1024, 4096), MIN_CONNECTIONS);
        assert_eq!(max_connections_for(u64::MAX, 1), Semaphore::MAX_PERMITS);
    }
}
