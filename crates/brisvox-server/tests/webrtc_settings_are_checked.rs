//! `[server.webrtc]` as docs/AGENT_FILE.md documents it: `udp_ports`,
//! `udp_ip` and `public_ip` are read, defaults apply when the table is
//! absent, and the values the docs rule out are refused by `brisvox check`
//! with the key named.

mod common;

use brisvox_server::agent::DEFAULT_WEBRTC_UDP_PORTS;
use common::{check_agent as check, invalid_key};

#[test]
fn the_documented_keys_are_read_and_defaulted() {
    let absent = check("").expect("no [server.webrtc] is valid");
    assert_eq!(absent.server.webrtc.udp_ports, DEFAULT_WEBRTC_UDP_PORTS);
    assert!(absent.server.webrtc.udp_ip.is_unspecified());
    assert_eq!(absent.server.webrtc.public_ip, None);

    let set = check(
        "[server.webrtc]\nudp_ports = [40000, 40009]\nudp_ip = \"127.0.0.1\"\npublic_ip = \"203.0.113.7\"\n",
    )
    .expect("valid settings");
    assert_eq!(set.server.webrtc.udp_ports, [40000, 40009]);
    assert_eq!(set.server.webrtc.udp_ip.to_string(), "127.0.0.1");
    assert_eq!(
        set.server.webrtc.public_ip.map(|ip| ip.to_string()),
        Some("203.0.113.7".to_owned())
    );
}

#[test]
fn ranges_and_addresses_the_docs_rule_out_are_refused() {
    for ports in ["[1000, 2000]", "[50010, 50000]"] {
        assert_eq!(
            invalid_key(&format!("[server.webrtc]\nudp_ports = {ports}\n")),
            "server.webrtc.udp_ports"
        );
    }
    for ip in ["0.0.0.0", "::"] {
        assert_eq!(
            invalid_key(&format!("[server.webrtc]\npublic_ip = \"{ip}\"\n")),
            "server.webrtc.public_ip"
        );
    }
}
