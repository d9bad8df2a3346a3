//! A lossy UDP link (feature `webrtc`): a proxy that forwards datagrams
//! between one client and one server address and drops a seeded share of
//! them in each direction (every datagram alike: ICE, DTLS, SCTP, RTP).
//! Which datagrams drop depends only on the seed and their order.
//!
//! The server's WebRTC loss test puts one in front of a call's socket; for
//! a browser, `brisvox-bench lossy-proxy` puts one on each port of a range
//! of another loopback address (the server's `public_ip`), as a 1:1 NAT
//! would.
//!
//! The client is whoever sent the last datagram to the front socket; the
//! server sees the proxy's back socket as its client.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

use crate::dice::Dice;

/// Largest datagram forwarded.
const MAX_DATAGRAM: usize = 2048;

/// A direction of the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// From the client to the server.
    ToServer = 0,
    /// From the server to the client.
    ToClient = 1,
}

/// Datagrams forwarded and dropped each way (shared by every proxy of a
/// range).
#[derive(Debug, Default)]
pub struct LossCounts {
    forwarded: [AtomicU64; 2],
    dropped: [AtomicU64; 2],
}

impl LossCounts {
    fn count(&self, way: Way, dropped: bool) {
        let n = if dropped {
            &self.dropped
        } else {
            &self.forwarded
        };
        n[way as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// `(forwarded, dropped)` datagrams going `way`.
    pub fn get(&self, way: Way) -> (u64, u64) {
        let forwarded = self.forwarded[way as usize].load(Ordering::Relaxed);
        (
            forwarded,
            self.dropped[way as usize].load(Ordering::Relaxed),
        )
    }
}

/// Starts a proxy whose front socket is bound to `front` (port 0: any) and
/// forwards to `server`, dropping `loss_percent` % each way (seeded by
/// `seed`, the other way by a seed derived from it); returns the front
/// address and the task (it runs until aborted or its runtime ends).
pub async fn lossy_proxy(
    front: SocketAddr,
    server: SocketAddr,
    loss_percent: u8,
    seed: u64,
    counts: Arc<LossCounts>,
) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let front = UdpSocket::bind(front).await?;
    let back = UdpSocket::bind(SocketAddr::new(server.ip(), 0)).await?;
    let addr = front.local_addr()?;
    let mut dice = [
        Dice::new(seed, loss_percent),
        Dice::new(seed ^ 0x9e37_79b9_7f4a_7c15, loss_percent),
    ];
    let task = tokio::spawn(async move {
        let mut client = None;
        let (mut up, mut down) = (vec![0u8; MAX_DATAGRAM], vec![0u8; MAX_DATAGRAM]);
        loop {
            tokio::select! {
                r = front.recv_from(&mut up) => {
                    let Ok((n, from)) = r else { return };
                    client = Some(from);
                    let drop = dice[0].drops();
                    if !drop {
                        let _ = back.send_to(&up[..n], server).await;
                    }
                    counts.count(Way::ToServer, drop);
                }
                r = back.recv_from(&mut down) => {
                    let Ok((n, _)) = r else { return };
                    let Some(to) = client else { continue };
                    let drop = dice[1].drops();
                    if !drop {
                        let _ = front.send_to(&down[..n], to).await;
                    }
                    counts.count(Way::ToClient, drop);
                }
            }
        }
    });
    Ok((addr, task))
}
