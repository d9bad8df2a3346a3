//! What both websocket routes share: the socket writer task and call outcomes.
//!
//! A call's socket is split: the session task reads and decodes, a writer task
//! owns the sending half. The writer takes the handler's [`Outbound`] items
//! (frames, clear, events) and the session's [`WriterCmd`]s, and turns them into
//! wire messages through a [`Wire`] (brisvox JSON + binary, or Twilio JSON).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use brisvox_transport::brisvox_ws::ServerEvent;
use futures_util::SinkExt;
use futures_util::stream::SplitSink;
use tokio::sync::mpsc;

use crate::handler::Outbound;
use crate::metrics::ServerMetrics;

/// The sending half of a call's socket.
pub(crate) type WsSink = SplitSink<WebSocket, Message>;

/// Capacity of the session-to-writer command queue.
pub(crate) const WRITER_CMD_QUEUE: usize = 16;

/// How a call ended (the `outcome` label of `brisvox_calls_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The handler finished the call.
    Completed,
    /// The client sent `end` (or Twilio `stop`).
    ClientEnd,
    /// The socket closed or failed without an `end`.
    Disconnected,
    /// Bad input ended the call.
    ProtocolError {
        /// The websocket close code for the error.
        close_code: u16,
    },
    /// The handler failed.
    HandlerError,
    /// `limits.max_call_duration_s` passed.
    MaxDuration,
    /// The server ended it after the drain grace.
    Drained,
    /// No `start` in time.
    StartTimeout,
}

impl Outcome {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::ClientEnd => "client_end",
            Self::Disconnected => "disconnected",
            Self::ProtocolError { .. } => "protocol_error",
            Self::HandlerError => "handler_error",
            Self::MaxDuration => "max_duration",
            Self::Drained => "server_draining",
            Self::StartTimeout => "start_timeout",
        }
    }

    /// The websocket close code that goes with the outcome.
    pub(crate) fn close_code(self) -> u16 {
        match self {
            Self::Drained => 1001,
            Self::HandlerError => 1011,
            Self::StartTimeout => 1008,
            Self::ProtocolError { close_code } => close_code,
            _ => 1000,
        }
    }
}

/// What the session tells its writer.
#[derive(Debug)]
pub(crate) enum WriterCmd {
    /// An event from the server itself (an `error`).
    Event(ServerEvent),
    /// Twilio echoed a mark.
    MarkEcho(String),
    /// Flush what the handler queued, say `end` (when `reason` is set and the
    /// protocol has events), close with `code`, and stop.
    Close { reason: Option<String>, code: u16 },
}

/// One transport's way of writing a call's output.
pub(crate) trait Wire: Send + 'static {
    /// Writes answer audio (`samples` at `rate_hz`).
    fn audio(
        &mut self,
        samples: &[i16],
        rate_hz: u32,
    ) -> impl Future<Output = Result<(), axum::Error>> + Send;
    /// Barge-in.
    fn clear(&mut self) -> impl Future<Output = Result<(), axum::Error>> + Send;
    /// Writes an event (or maps it to the transport's own messages).
    fn event(&mut self, ev: &ServerEvent) -> impl Future<Output = Result<(), axum::Error>> + Send;
    /// Handles a mark echo (Twilio only).
    fn mark_echo(&mut self, _name: &str) {}
    /// Says `end` if the protocol can, and closes.
    fn close(self, reason: Option<String>, code: u16) -> impl Future<Output = ()> + Send;
}

/// Sends a close frame; errors mean the socket is already gone.
pub(crate) async fn send_close(sink: &mut WsSink, code: u16, reason: &str) {
    let frame = CloseFrame {
        code,
        reason: reason.chars().take(120).collect::<String>().into(),
    };
    let _ = sink.send(Message::Close(Some(frame))).await;
}

/// Runs a call's writer until the session sends `Close`.
pub(crate) async fn run_writer<W: Wire>(
    mut wire: W,
    mut out_rx: mpsc::Receiver<Outbound>,
    mut cmd_rx: mpsc::Receiver<WriterCmd>,
    generation: Arc<AtomicU64>,
    metrics: ServerMetrics,
) {
    let mut out_open = true;
    let mut broken = false;
    loop {
        tokio::select! {
            biased;
            cmd = cmd_rx.recv() => match cmd {
                Some(WriterCmd::Event(ev)) => {
                    if !broken {
                        broken = wire.event(&ev).await.is_err();
                    }
                }
                Some(WriterCmd::MarkEcho(name)) => wire.mark_echo(&name),
                Some(WriterCmd::Close { reason, code }) => {
                    while let Ok(item) = out_rx.try_recv() {
                        if broken { break; }
                        broken |= write_item(&mut wire, item, &generation, &metrics).await;
                    }
                    wire.close(reason, code).await;
                    return;
                }
                None => return,
            },
            item = out_rx.recv(), if out_open => match item {
                Some(item) if !broken => broken |= write_item(&mut wire, item, &generation, &metrics).await,
                Some(_) => {}
                None => out_open = false,
            },
        }
    }
}

/// Writes one handler item; true when the socket failed.
async fn write_item<W: Wire>(
    wire: &mut W,
    item: Outbound,
    generation: &AtomicU64,
    metrics: &ServerMetrics,
) -> bool {
    let res = match item {
        Outbound::Audio {
            chunk,
            generation: g,
        } => {
            if g < generation.load(Ordering::Acquire) {
                return false; // sent before a clear: never played
            }
            wire.audio(chunk.samples(), chunk.rate_hz()).await
        }
        Outbound::Clear => wire.clear().await,
        Outbound::Event(ev) => {
            if let ServerEvent::TurnMetrics { metrics: m, .. } = &ev {
                metrics.observe_turn(m);
            }
            wire.event(&ev).await
        }
    };
    res.is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_label_is_pre_registered() {
        let all = [
            Outcome::Completed,
            Outcome::ClientEnd,
            Outcome::Disconnected,
            Outcome::ProtocolError { close_code: 1002 },
            Outcome::HandlerError,
            Outcome::MaxDuration,
            Outcome::Drained,
            Outcome::StartTimeout,
        ];
        for o in all {
            assert!(crate::metrics::CALL_OUTCOMES.contains(&o.label()), "{o:?}");
        }
        assert_eq!(all.len(), crate::metrics::CALL_OUTCOMES.len());
    }
}
