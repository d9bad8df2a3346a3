//! One call over WebRTC (`--transports webrtc`): the `/call` URL's server is
//! offered the call at `POST /webrtc/offer` (same host, same `?token=`) by
//! the workspace's one WebRTC client, `brisvox_testkit::webrtc::Caller`.
//!
//! Measured at the same points as the `/call` client ([`super::client`]):
//! the fixture is spoken on the same absolute 20 ms schedule
//! ([`super::schedule`]; frame `k` leaves at `begin + (k+1)·20 ms`, Opus at
//! the fixture's rate) from the moment ICE, DTLS and the data channel are
//! up, and V2V is the arrival of the first bot audio packet whose decoded
//! 20 ms has a sample at or above [`turns::NON_SILENT_PEAK`], minus the
//! fixture's end of speech. Arrival is when the caller's socket read it,
//! decrypted (SRTP) and decoded (Opus) at once: the caller has no jitter
//! buffer, so a browser, which holds packets in one (33-118 ms in the
//! Chromium test's runs, docs/WEBRTC.md), hears the answer later than this.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use brisvox_testkit::webrtc::{Caller, signal};

use super::client::{
    CallRecord, CallSettings, PreparedFixture, Shared, StopRule, Transport, record_lateness,
};
use super::{schedule, turns};

/// Where the offer goes for a `/call` URL: the server's address and
/// `/webrtc/offer` with the URL's query (its token).
pub(crate) fn offer_target(url: &str) -> Result<(SocketAddr, String), String> {
    let rest = url
        .strip_prefix("ws://")
        .ok_or_else(|| format!("--transports webrtc needs a ws:// URL of /call: {url}"))?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (route, query) = path.split_once('?').unwrap_or((path, ""));
    if route != "call" {
        return Err(format!(
            "--transports webrtc needs the server's /call URL (the offer goes to /webrtc/offer beside it): {url}"
        ));
    }
    let addr = authority
        .parse()
        .map_err(|_| format!("--transports webrtc needs IP:PORT in the URL: {authority}"))?;
    let path = if query.is_empty() {
        "/webrtc/offer".to_owned()
    } else {
        format!("/webrtc/offer?{query}")
    };
    Ok((addr, path))
}

/// Runs one call over WebRTC to completion; never panics on a server's
/// misbehaviour.
pub(crate) async fn run_call(
    settings: &CallSettings,
    fx: Arc<PreparedFixture>,
    call_id: &str,
) -> CallRecord {
    let mut record = CallRecord::empty(&fx);
    record.transport = Transport::WebRtc.name();
    let mut bot_audio_us = Vec::new();
    if let Err(e) = call(settings, &fx, call_id, &mut record, &mut bot_audio_us).await {
        record.error = Some(e);
    }
    record.bot_audio_messages = bot_audio_us.len() as u64;
    let window_us = settings.response_window_ms * 1000;
    record.turns = turns::classify(&fx.spans, &bot_audio_us, window_us);
    record.bot_audio_us = bot_audio_us;
    record
}

/// Offers, connects, speaks the fixture and ends; `bot_audio_us` gets the
/// arrival of every non-silent bot packet (µs from `begin`).
async fn call(
    settings: &CallSettings,
    fx: &PreparedFixture,
    call_id: &str,
    record: &mut CallRecord,
    bot_audio_us: &mut Vec<u64>,
) -> Result<(), String> {
    let mut caller = connect(settings, fx, call_id).await?;
    let begin = Instant::now();
    let mut seen = Seen::default();
    let sent = speak(settings, fx, &mut caller, begin, &mut seen, record).await;
    seen.take(&caller, begin, record, bot_audio_us);
    sent?;
    if record.end_reason.is_none() {
        let limit = Instant::now() + Duration::from_secs(3);
        let _ = caller.send_text(r#"{"type":"end","reason":"benchmark done"}"#);
        caller
            .run_until(limit, "the server's end", |c| c.saw("end"))
            .await
            .map_err(|e| e.to_string())?;
        seen.take(&caller, begin, record, bot_audio_us);
    }
    match record.end_reason.as_deref() {
        Some("client_end") | Some("completed") => Ok(()),
        other => Err(format!("server ended the call: {other:?}")),
    }
}

/// Offers the call and waits for ICE, DTLS and the data channel.
async fn connect(
    settings: &CallSettings,
    fx: &PreparedFixture,
    call_id: &str,
) -> Result<Caller, String> {
    let (server, path) = offer_target(&settings.url)?;
    let bind = SocketAddr::new(server.ip(), 0);
    let rate = fx.fixture.sidecar.sample_rate_hz;
    let mut caller = Caller::offer(bind, rate)
        .await
        .map_err(|e| format!("{}: {e}", fx.fixture.sidecar.name))?;
    let limit = Instant::now() + Duration::from_millis(settings.connect_timeout_ms);
    let answer =
        tokio::time::timeout_at(limit.into(), signal(server, &path, &caller.offer, call_id))
            .await
            .map_err(|_| "no answer to the offer in time".to_owned())?
            .map_err(|e| e.to_string())?;
    let sdp = answer["sdp"].as_str().unwrap_or_default();
    caller.accept(sdp).map_err(|e| e.to_string())?;
    caller
        .run_until(limit, "connected", |c| c.connected && c.channel_open)
        .await
        .map_err(|e| e.to_string())?;
    Ok(caller)
}

/// Sends the fixture and then silence, frame `k` at `begin + (k+1)·20 ms`,
/// until [`StopRule`] says the last reply has played.
async fn speak(
    settings: &CallSettings,
    fx: &PreparedFixture,
    caller: &mut Caller,
    begin: Instant,
    seen: &mut Seen,
    record: &mut CallRecord,
) -> Result<(), String> {
    let stop = StopRule::of(settings, fx);
    let shared = Shared::default();
    let frame_len = schedule::frame_samples(fx.fixture.sidecar.sample_rate_hz);
    let mut frames = fx.fixture.samples.chunks(frame_len);
    let mut frame = vec![0i16; frame_len];
    for k in 0u64.. {
        let due = schedule::deadline(k);
        let next = frames.next();
        if next.is_none() && stop.now(&shared, due) {
            return Ok(());
        }
        loop {
            let timeout = caller.drive().await.map_err(|e| e.to_string())?;
            seen.note(caller, begin, &shared);
            if begin.elapsed() >= due {
                break;
            }
            let until = timeout.min(begin + due);
            caller.step(until).await.map_err(|e| e.to_string())?;
        }
        frame.fill(0);
        let samples = next.unwrap_or_default();
        frame[..samples.len()].copy_from_slice(samples);
        caller.send_frame(&frame).map_err(|e| e.to_string())?;
        record_lateness(record, due, begin);
    }
    Ok(())
}

/// How far the caller's bot frames and events have been looked at.
#[derive(Default)]
struct Seen {
    frames: usize,
    events: usize,
}

impl Seen {
    /// Tells the stop rule of new loud bot audio and of the server's `end`.
    fn note(&self, caller: &Caller, begin: Instant, shared: &Shared) {
        let loud = caller.bot_frames[self.frames..]
            .iter()
            .rev()
            .find(|f| turns::is_loud_peak(f.peak));
        if let Some(f) = loud {
            let at_us = f.at.saturating_duration_since(begin).as_micros() as u64;
            shared.last_bot_audio_us.store(at_us + 1, Ordering::Release);
        }
        if caller.events[self.events..]
            .iter()
            .any(|e| e.event["type"] == "end")
        {
            shared.closed.store(true, Ordering::Release);
        }
    }

    /// Moves what arrived since the last call into the record.
    fn take(
        &mut self,
        caller: &Caller,
        begin: Instant,
        record: &mut CallRecord,
        bot_audio_us: &mut Vec<u64>,
    ) {
        let us = |at: Instant| at.saturating_duration_since(begin).as_micros() as u64;
        for f in &caller.bot_frames[self.frames..] {
            if turns::is_loud_peak(f.peak) {
                bot_audio_us.push(us(f.at));
            }
        }
        for e in &caller.events[self.events..] {
            match e.event["type"].as_str() {
                Some("turn_metrics") => record.turn_metrics.push(e.event.clone()),
                Some("clear") => record.clear_us.push(us(e.at)),
                Some("error") => {
                    let msg = format!("error event: {}", e.event);
                    record.error.get_or_insert(msg);
                }
                Some("end") => {
                    let reason = e.event["reason"].as_str().unwrap_or_default();
                    record.end_reason = Some(reason.to_owned());
                }
                _ => {}
            }
        }
        record.clears = record.clear_us.len() as u32;
        self.frames = caller.bot_frames.len();
        self.events = caller.events.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offer_goes_beside_call_with_its_token() {
        let (addr, path) = offer_target("ws://127.0.0.1:8080/call?token=t").unwrap();
        assert_eq!(addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(path, "/webrtc/offer?token=t");
        let (_, path) = offer_target("ws://127.0.0.1:8080/call").unwrap();
        assert_eq!(path, "/webrtc/offer");
        for bad in [
            "ws://127.0.0.1:8080/twilio",
            "http://127.0.0.1:8080/call",
            "ws://localhost:8080/call",
        ] {
            assert!(offer_target(bad).is_err(), "{bad}");
        }
    }
}
