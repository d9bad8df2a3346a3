//! A faulty TCP link (feature `tcp`): a loopback proxy in front of one server
//! address that forwards every connection both ways and does to the server's
//! stream (server to client) what its [`TcpFault`] says: hold each chunk a
//! seeded delay, or after a number of bytes end it (an orderly end of
//! stream), reset it (RST) or stall it (nothing more, the connection stays
//! open). The adapters' tests put one between a real adapter and its fake
//! vendor server.
//!
//! Each connection gets the fault afresh (a reconnecting client meets it
//! again); the delays follow the seed and the order of the chunks
//! ([`Dice`], the lossy UDP link's generator).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::dice::Dice;

/// Bytes read at once from either side.
const CHUNK: usize = 16 * 1024;

/// What the link does to the server's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpFault {
    /// Forward everything, each chunk held 0 to `max_ms` ms (seeded).
    Delay {
        /// Longest hold, in ms.
        max_ms: u64,
    },
    /// Forward `after_bytes` bytes, then end the stream (FIN) and drop the
    /// server's connection.
    Truncate {
        /// Bytes forwarded first.
        after_bytes: u64,
    },
    /// Forward `after_bytes` bytes, then reset the client's connection.
    Reset {
        /// Bytes forwarded first.
        after_bytes: u64,
    },
    /// Forward `after_bytes` bytes, then nothing more either way, the
    /// connections held open until the proxy stops.
    Stall {
        /// Bytes forwarded first.
        after_bytes: u64,
    },
}

impl TcpFault {
    fn cut_after(self) -> Option<u64> {
        match self {
            TcpFault::Delay { .. } => None,
            TcpFault::Truncate { after_bytes }
            | TcpFault::Reset { after_bytes }
            | TcpFault::Stall { after_bytes } => Some(after_bytes),
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    connections: AtomicU64,
    to_client: AtomicU64,
    fired: AtomicU64,
}

/// A running proxy; stops (with every connection) when dropped.
#[derive(Debug)]
pub struct FaultyTcp {
    addr: SocketAddr,
    counts: Arc<Counts>,
    task: JoinHandle<()>,
}

impl FaultyTcp {
    /// Listens on 127.0.0.1 (any port) and forwards to `server` with `fault`,
    /// its delays drawn from `seed`.
    pub async fn start(server: SocketAddr, fault: TcpFault, seed: u64) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let counts = Arc::new(Counts::default());
        let shared = counts.clone();
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let n = shared.connections.fetch_add(1, Ordering::Relaxed);
                let dice = Dice::new(seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15), 0);
                conns.spawn(link(client, server, fault, dice, shared.clone()));
            }
        });
        Ok(FaultyTcp { addr, counts, task })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.counts.connections.load(Ordering::Relaxed)
    }

    /// Bytes forwarded from the server to clients so far.
    pub fn bytes_to_client(&self) -> u64 {
        self.counts.to_client.load(Ordering::Relaxed)
    }

    /// Connections the fault has cut (ended, reset or stalled).
    pub fn faults_fired(&self) -> u64 {
        self.counts.fired.load(Ordering::Relaxed)
    }
}

impl Drop for FaultyTcp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One connection: forwards both ways until either side ends or the fault fires.
async fn link(
    mut client: TcpStream,
    server: SocketAddr,
    fault: TcpFault,
    mut dice: Dice,
    counts: Arc<Counts>,
) {
    let Ok(mut upstream) = TcpStream::connect(server).await else {
        return;
    };
    let mut budget = fault.cut_after();
    let (mut up, mut down) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    loop {
        tokio::select! {
            r = client.read(&mut up) => match r {
                Ok(n) if n > 0 => {
                    if upstream.write_all(&up[..n]).await.is_err() {
                        return;
                    }
                }
                _ => {
                    let _ = upstream.shutdown().await;
                    return;
                }
            },
            r = upstream.read(&mut down) => {
                let n = match r {
                    Ok(n) if n > 0 => n,
                    _ => {
                        let _ = client.shutdown().await;
                        return;
                    }
                };
                if let TcpFault::Delay { max_ms } = fault {
                    tokio::time::sleep(Duration::from_millis(dice.below(max_ms + 1))).await;
                }
                let send = budget.map_or(n, |left| n.min(usize::try_from(left).unwrap_or(n)));
                if client.write_all(&down[..send]).await.is_err() {
                    return;
                }
                counts.to_client.fetch_add(send as u64, Ordering::Relaxed);
                if let Some(left) = budget.as_mut() {
                    *left -= send as u64;
                    if *left == 0 {
                        counts.fired.fetch_add(1, Ordering::Relaxed);
                        return cut(client, upstream, fault).await;
                    }
                }
            }
        }
    }
}

/// The fault fires on `client`'s connection.
async fn cut(mut client: TcpStream, upstream: TcpStream, fault: TcpFault) {
    match fault {
        TcpFault::Delay { .. } => {}
        TcpFault::Truncate { .. } => {
            drop(upstream);
            let _ = client.shutdown().await;
            // Read what the client still sends until it closes, so the end
            // stays orderly (closing with unread data would reset).
            let mut sink = vec![0u8; CHUNK];
            while matches!(client.read(&mut sink).await, Ok(n) if n > 0) {}
        }
        TcpFault::Reset { .. } => {
            drop(upstream);
            // Linger 0: the close sends RST. (Deprecated because a non-zero
            // linger blocks the thread at the drop; a zero one does not.)
            #[allow(deprecated)]
            let _ = client.set_linger(Some(Duration::ZERO));
            drop(client);
        }
        TcpFault::Stall { .. } => {
            // Hold both ends open; the proxy's end drops them.
            let _keep = (client, upstream);
            std::future::pending::<()>().await;
        }
    }
}
