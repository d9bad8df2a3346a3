//! `brisvox-bench lossy-proxy`: a seeded lossy UDP link in front of every
//! port of a range, as a 1:1 NAT maps one address to another: datagrams to
//! `FRONT_IP:P` go to `SERVER_IP:P` and back, a share of them dropped each
//! way (`brisvox_testkit::lossy_udp`, the server's loss test's proxy).
//!
//! For the browser's loss test: the server binds its WebRTC ports on
//! `SERVER_IP` and announces `FRONT_IP` (`[server.webrtc] public_ip`), so the
//! browser's datagrams cross the proxy. Prints `lossy-proxy: ready` once
//! every port is bound, runs until its standard input closes, then prints
//! the counts (`lossy-proxy: to the server F forwarded D dropped; to the
//! client F forwarded D dropped`) and exits.

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use brisvox_testkit::lossy_udp::{LossCounts, Way, lossy_proxy};

const USAGE: &str =
    "usage: brisvox-bench lossy-proxy --front-ip IP --server-ip IP --ports FIRST-LAST
                         [--loss-percent 5] [--seed 1]
  forwards FRONT_IP:P <-> SERVER_IP:P for every port P of the range, dropping
  --loss-percent of the datagrams each way (seeded); runs until stdin closes";

/// Most ports one proxy serves.
const MAX_PORTS: u16 = 256;

/// Options of `lossy-proxy`.
#[derive(Debug, PartialEq)]
struct Args {
    front: IpAddr,
    server: IpAddr,
    ports: (u16, u16),
    loss_percent: u8,
    seed: u64,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let (mut front, mut server, mut ports) = (None, None, None);
    let (mut loss_percent, mut seed) = (5u8, 1u64);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n\n{USAGE}"))?;
        let bad = || format!("bad value for {flag}: {v}\n\n{USAGE}");
        match flag.as_str() {
            "--front-ip" => front = Some(v.parse().map_err(|_| bad())?),
            "--server-ip" => server = Some(v.parse().map_err(|_| bad())?),
            "--ports" => {
                let (a, b) = v.split_once('-').ok_or_else(bad)?;
                let (a, b): (u16, u16) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a == 0 || a > b || b - a >= MAX_PORTS {
                    return Err(bad());
                }
                ports = Some((a, b));
            }
            "--loss-percent" => {
                loss_percent = v.parse().ok().filter(|&p| p <= 100).ok_or_else(bad)?;
            }
            "--seed" => seed = v.parse().map_err(|_| bad())?,
            _ => return Err(format!("unknown option {flag}\n\n{USAGE}")),
        }
    }
    let need = |what| format!("{what} is required\n\n{USAGE}");
    Ok(Args {
        front: front.ok_or_else(|| need("--front-ip"))?,
        server: server.ok_or_else(|| need("--server-ip"))?,
        ports: ports.ok_or_else(|| need("--ports"))?,
        loss_percent,
        seed,
    })
}

/// Entry point of `brisvox-bench lossy-proxy`.
pub(crate) fn main(args: &[String]) -> Result<(), String> {
    let a = parse(args)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let counts = Arc::new(LossCounts::default());
    rt.block_on(async {
        for port in a.ports.0..=a.ports.1 {
            let front = SocketAddr::new(a.front, port);
            let server = SocketAddr::new(a.server, port);
            let seed = a.seed ^ u64::from(port);
            lossy_proxy(front, server, a.loss_percent, seed, counts.clone())
                .await
                .map_err(|e| format!("{front}: {e}"))?;
        }
        println!("lossy-proxy: ready");
        // Runs until stdin closes (read on a thread: the runtime forwards meanwhile).
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
        });
        let _ = stdin_closed.await;
        Ok::<(), String>(())
    })?;
    let (f0, d0) = counts.get(Way::ToServer);
    let (f1, d1) = counts.get(Way::ToClient);
    println!(
        "lossy-proxy: to the server {f0} forwarded {d0} dropped; to the client {f1} forwarded {d1} dropped"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_parse_and_nonsense_is_refused() {
        let a = parse(&args(&[
            "--front-ip",
            "127.0.0.2",
            "--server-ip",
            "127.0.0.1",
            "--ports",
            "50200-50219",
        ]))
        .unwrap();
        assert_eq!(a.ports, (50200, 50219));
        assert_eq!((a.loss_percent, a.seed), (5, 1));
        for bad in [
            vec!["--front-ip", "127.0.0.2", "--server-ip", "127.0.0.1"],
            vec![
                "--front-ip",
                "x",
                "--server-ip",
                "127.0.0.1",
                "--ports",
                "1-2",
            ],
            vec![
                "--front-ip",
                "127.0.0.2",
                "--server-ip",
                "127.0.0.1",
                "--ports",
                "9-8",
            ],
            vec![
                "--front-ip",
                "127.0.0.2",
                "--server-ip",
                "127.0.0.1",
                "--ports",
                "1000-2000",
            ],
            vec![
                "--front-ip",
                "127.0.0.2",
                "--server-ip",
                "127.0.0.1",
                "--ports",
                "1-2",
                "--loss-percent",
                "101",
            ],
        ] {
            assert!(parse(&args(&bad)).is_err(), "{bad:?}");
        }
    }
}
