//! The real `brisvox serve` binary answers a call on every carrier's route,
//! each driven by a fake carrier speaking that carrier's documented protocol
//! (`CarrierEmulator`): Twilio (mu-law, signature checked), Telnyx (A-law,
//! token in the query), Plivo (mu-law, checkpoints), Vonage (16 kHz linear
//! PCM in binary frames, notify) and Exotel (8 kHz linear PCM, token as a
//! stream parameter). Each plays a recorded phone prompt in real time until
//! the answer is heard (marks echoed as the carrier would), talks over the
//! answer until the server sends the carrier's clear, presses a key (the
//! engine logs it), and ends the stream. A second binary, whose calls last at
//! most a second, hangs each call up through the carrier's REST API (a local
//! fake checking the request). The first binary records its calls: each
//! recording holds both sides and the interrupted bot turn.
//!
//! The engine runs its energy VAD and mock providers: no model files needed.

mod common;

use std::net::SocketAddr;

use brisvox_audio::wav::read_wav;
use brisvox_testkit::{eventually_async, eventually_some_async, later};
use brisvox_transport::Carrier;
use brisvox_transport::twilio::signature::compute_signature;
use common::binary::{Logs, start_server_with};
use common::carrier::{FakeCarrier, Seen, speech, talk_until, test_format};
use common::rest::fake_api;

const KEY: &str = include_str!("../../brisvox-transport/tests/fixtures/vonage_test_key.pem");

const CARRIERS: [Carrier; 5] = [
    Carrier::Twilio,
    Carrier::Telnyx,
    Carrier::Plivo,
    Carrier::Vonage,
    Carrier::Exotel,
];

struct Server {
    /// The running binary (killed on drop).
    binary: common::binary::Server,
    logs: Logs,
    dir: tempfile::TempDir,
}

fn agent_file(api_base: &str, extra: &str) -> String {
    format!(
        r#"greeting = ""
{extra}
[vad]
detector = "energy"
min_silence_ms = 200
[turn]
analyzer = "always_complete"
[llm.mock]
first_token_ms = 50
answer = "Thank you for calling. Let me read you a long answer so that you have time to talk over me, which is what this test does on purpose, one word after another, for several seconds at least."
[server.auth.telnyx]
token = "${{BV_TELNYX_TOKEN}}"
accept = "query"
[server.auth.exotel]
token = "${{BV_EXOTEL_TOKEN}}"
[telephony.twilio]
account_sid = "AC0123"
auth_token = "${{TWILIO_AUTH_TOKEN}}"
api_base = "{api_base}"
[telephony.telnyx]
api_key = "${{TELNYX_API_KEY}}"
api_base = "{api_base}"
[telephony.plivo]
auth_id = "MA0123"
auth_token = "${{PLIVO_AUTH_TOKEN}}"
api_base = "{api_base}"
[telephony.vonage]
application_id = "app-1"
private_key = "${{VONAGE_PRIVATE_KEY}}"
api_base = "{api_base}"
[telephony.exotel]
"#
    )
}

/// Starts the binary; with `record`, calls are recorded in `dir/rec`.
fn start_server(api_base: &str, extra: &str, record: bool) -> Server {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("agent.toml");
    let recording = if record {
        let rec = dir.path().join("rec");
        std::fs::create_dir(&rec).expect("recordings dir");
        format!("[recording]\ndirectory = {rec:?}\n")
    } else {
        String::new()
    };
    let extra = format!("{extra}\n{recording}");
    std::fs::write(&path, agent_file(api_base, &extra)).expect("agent file written");
    let logs = Logs::default();
    let agent = path.to_str().expect("a UTF-8 path");
    let env = [
        ("BV_TELNYX_TOKEN", "telnyx-secret"),
        ("BV_EXOTEL_TOKEN", "exotel-secret"),
        ("TWILIO_AUTH_TOKEN", "twilio-auth"),
        ("TELNYX_API_KEY", "telnyx-key"),
        ("PLIVO_AUTH_TOKEN", "plivo-auth"),
        ("VONAGE_PRIVATE_KEY", KEY),
    ];
    let binary = start_server_with(&["--agent", agent], &env, Some(Logs::clone(&logs)));
    Server { binary, logs, dir }
}

/// Opens `carrier`'s stream the way its setup page says.
async fn open(addr: SocketAddr, carrier: Carrier, call_id: &str) -> FakeCarrier {
    let path = format!("/{}", carrier.as_str());
    let ws = match carrier {
        Carrier::Twilio => {
            let sig = compute_signature("twilio-auth", &format!("wss://{addr}/twilio"), &[]);
            common::connect_with(addr, &path, &[("X-Twilio-Signature", sig.as_str())]).await
        }
        Carrier::Telnyx => common::connect_with(addr, "/telnyx?token=telnyx-secret", &[]).await,
        _ => common::connect_with(addr, &path, &[]).await,
    }
    .unwrap_or_else(|status| panic!("{carrier:?} upgrade refused with {status}"));
    let mut fake = FakeCarrier::with_ids(ws, carrier, test_format(carrier), call_id);
    let params = match carrier {
        Carrier::Exotel => serde_json::json!({"lang": "en", "token": "exotel-secret"}),
        _ => serde_json::json!({"lang": "en"}),
    };
    fake.open(params).await;
    fake
}

fn logged(server: &Server, message: &str, call_id: &str, field: &str, value: &str) -> bool {
    server.logs.lock().expect("log lock").iter().any(|v| {
        let f = &v["fields"];
        f["message"] == message && f["call_id"] == call_id && f[field] == value
    })
}

async fn converse(server: &Server, carrier: Carrier) {
    let call_id = format!("{}-call", carrier.as_str());
    let mut fake = open(server.binary.addr, carrier, &call_id).await;
    let speech = speech(fake.emu.format());
    let mut seen = Seen::default();
    talk_until(&mut fake, &speech, &mut seen, true, |s| {
        s.audible_ms >= 400 && s.marks > 0
    })
    .await;
    // Talk over the answer: the server must tell the carrier to drop it.
    talk_until(&mut fake, &speech, &mut seen, true, |s| s.clears > 0).await;
    let key = fake.emu.dtmf('5');
    fake.send(key).await;
    let what = later(|| format!("{carrier:?}: the engine never logged the key press"));
    eventually_async(common::WAIT, what, || async {
        logged(server, "dtmf", &call_id, "digit", "5")
    })
    .await;
    match fake.emu.stop() {
        Some(stop) => {
            fake.send(stop).await;
            assert_eq!(fake.until_close().await, Some(1000), "{carrier:?}");
        }
        // Plivo and Vonage end a stream by closing the socket.
        None => drop(fake),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_carrier_is_answered_interrupted_and_keyed() {
    let api = fake_api(200).await;
    let server = start_server(&api.base(), "", true);
    let calls = CARRIERS.map(|c| converse(&server, c));
    futures_util::future::join_all(calls).await;
    assert!(logged(
        &server,
        "carrier call started",
        "telnyx-call",
        "carrier",
        "telnyx"
    ));
    for carrier in CARRIERS {
        check_recording(&server.dir.path().join("rec"), carrier).await;
    }
}

/// The call's recording holds the caller (left) and the bot (right), and its
/// transcript the interrupted bot turn.
async fn check_recording(dir: &std::path::Path, carrier: Carrier) {
    let prefix = format!("{}-call-", carrier.as_str());
    let find = |ext: &str| {
        std::fs::read_dir(dir)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                name.starts_with(&prefix) && name.ends_with(ext)
            })
    };
    let what = later(|| format!("{carrier:?}: no recording in {}", dir.display()));
    let json =
        eventually_some_async(common::WAIT, what, || std::future::ready(find(".json"))).await;
    let wav = find(".wav").expect("the WAV beside its transcript");
    let audio = read_wav(&std::fs::read(wav).unwrap()).unwrap();
    assert_eq!(audio.spec.channels, 2);
    let loud = |channel: usize| {
        audio
            .samples
            .iter()
            .skip(channel)
            .step_by(2)
            .filter(|s| s.unsigned_abs() > 1000)
            .count()
    };
    // Both sides spoke for at least 200 ms (16 kHz samples).
    assert!(
        loud(0) > 3200 && loud(1) > 3200,
        "{carrier:?}: {} / {}",
        loud(0),
        loud(1)
    );
    let transcript: serde_json::Value =
        serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    assert!(
        transcript["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["role"] == "bot" && e["interrupted"] == true),
        "{carrier:?}: {transcript}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_the_server_ends_are_hung_up_by_rest() {
    let mut api = fake_api(200).await;
    let server = start_server(&api.base(), "[limits]\nmax_call_duration_s = 1", false);
    let with_rest = [
        Carrier::Twilio,
        Carrier::Telnyx,
        Carrier::Plivo,
        Carrier::Vonage,
    ];
    let calls = with_rest.map(|carrier| async move {
        let mut fake = open(
            server.binary.addr,
            carrier,
            &format!("{}-call", carrier.as_str()),
        )
        .await;
        // Silence until the call's length limit ends it from the server's side.
        let silence = fake.frame(false, 0);
        fake.media(&silence).await;
        assert_eq!(fake.until_close().await, Some(1000), "{carrier:?}");
    });
    futures_util::future::join_all(calls).await;
    let mut paths = Vec::new();
    for _ in with_rest {
        let req = api.next().await;
        paths.push(format!("{} {}", req.method, req.path));
    }
    paths.sort();
    assert_eq!(
        paths,
        [
            "DELETE /v1/Account/MA0123/Call/plivo-call/",
            "POST /2010-04-01/Accounts/AC0123/Calls/twilio-call.json",
            "POST /v2/calls/telnyx-call/actions/hangup",
            "PUT /v1/calls/vonage-call",
        ]
    );
}
