//! What every websocket route shares: running an admitted call over the
//! engine's one edge, the socket writer task, and how calls end.
//!
//! [`drive_call`] builds the call's [`RouteEdge`] (an inbound queue for the
//! route's reader, an audio queue for its writer, the call's event bus with
//! `/metrics` and the call log as observers and the writer as subscriber),
//! spawns the writer and the handler, runs the route's reader until the call
//! ends from any side, then closes. A route (one adapter file, e.g.
//! `ws_call`) supplies only what is its own: a [`Wire`] (how audio,
//! clear and events are written on its protocol) and a reader (how its
//! messages become frames and controls, through a sans-IO codec of
//! `brisvox-transport`).

use std::future::{Future, poll_fn};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use brisvox_core::{AudioFrame, Epoch};
use brisvox_engine::edge::{AUDIO_QUEUE_FRAMES, INBOUND_CONTROLS, INBOUND_FRAMES};
use brisvox_engine::events::EVENT_QUEUE_CAPACITY;
use brisvox_engine::gate::{Gate, Gated};
use brisvox_engine::turn::EndReason;
use brisvox_engine::{
    AudioQueueReceiver, CallContext, CallEdge, CallEnd, Control, EventBus, EventReceiver,
    InboundRefused, InboundSender, PlayoutConfirmations, QueuedAudio, audio_queue, inbound_queue,
};
use brisvox_transport::brisvox_ws::ServerEvent;
use futures_util::SinkExt;
use futures_util::stream::SplitSink;
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::admission::CallPermit;
use crate::call_log::CallLog;
use crate::call_recording::RecordingTap;
use crate::handler::{CallFailed, CallStart};
use crate::metrics::ServerMetrics;
use crate::state::AppState;
use crate::telemetry::CallTrace;
use crate::wire_events::WireEvents;

/// The sending half of a call's socket.
pub(crate) type WsSink = SplitSink<WebSocket, Message>;

/// How long a client has to send `start` after the upgrade.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a handler may take to return after its input closed before its
/// task is aborted.
pub const HANDLER_EXIT_GRACE: Duration = Duration::from_secs(5);

/// How long the writer may take to flush and close.
pub const WRITER_EXIT_GRACE: Duration = Duration::from_secs(5);

/// Capacity of the route-to-writer command queue.
const WRITER_CMD_QUEUE: usize = 16;

/// How a call ended (the `outcome` label of `brisvox_calls_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The handler (the agent, the engine's idle guard) ended the call.
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
    /// `limits.max_call_duration_s` passed (the engine's one call-length limit).
    MaxDuration,
    /// The server ended it after the drain grace.
    Drained,
    /// No `start` in time.
    StartTimeout,
    /// A carrier stream without the route's token in its parameters.
    Unauthorized,
    /// The handler handed the call over ([`CallEnd::Transferred`]): a
    /// carrier route transfers the phone call through the carrier's REST API.
    Transferred,
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
            Self::Unauthorized => "unauthorized",
            Self::Transferred => "transferred",
        }
    }

    /// The websocket close code that goes with the outcome.
    pub(crate) fn close_code(self) -> u16 {
        match self {
            Self::Drained => 1001,
            Self::HandlerError => 1011,
            Self::StartTimeout | Self::Unauthorized => 1008,
            Self::ProtocolError { close_code } => close_code,
            _ => 1000,
        }
    }

    /// The outcome of a call its handler ended with `end`.
    fn of_handler(end: &CallEnd) -> Self {
        match end {
            CallEnd::Transferred { .. } => Self::Transferred,
            CallEnd::Machine(EndReason::MaxDuration) => Self::MaxDuration,
            CallEnd::TransportClosed => Self::Disconnected,
            _ => Self::Completed,
        }
    }
}

/// What a route's reader tells the writer.
#[derive(Debug)]
pub(crate) enum WriterCmd {
    /// An event from the route itself (a protocol `error`).
    Event(ServerEvent),
    /// The carrier echoed a mark.
    MarkEcho(String),
    /// Flush what is queued, say `end` (when `reason` is set and the protocol
    /// has events), close with `code`, and stop.
    Close { reason: Option<String>, code: u16 },
}

/// One route's way of writing a call's output.
pub(crate) trait Wire: Send + 'static {
    /// Writes one answer frame of `epoch`'s answer (at the transport's rate).
    fn audio(
        &mut self,
        epoch: Epoch,
        frame: &AudioFrame,
    ) -> impl Future<Output = Result<(), axum::Error>> + Send;
    /// Barge-in: tell the far end to drop what it buffered.
    fn clear(&mut self) -> impl Future<Output = Result<(), axum::Error>> + Send;
    /// Writes an event (or maps it to the protocol's own messages).
    fn event(&mut self, ev: &ServerEvent) -> impl Future<Output = Result<(), axum::Error>> + Send;
    /// Handles a mark echo (carriers only).
    fn mark_echo(&mut self, _name: &str) {}
    /// Where the wire reports what the far end confirmed played (carriers,
    /// from their mark echoes); `None`: what the wire took counts as heard.
    fn playout_confirmations(&self) -> Option<PlayoutConfirmations> {
        None
    }
    /// Says `end` if the protocol can, and closes.
    fn close(self, reason: Option<String>, code: u16) -> impl Future<Output = ()> + Send;
}

/// Sends a close frame. When the peer closed first, the websocket refuses a
/// second close but holds the reply to the peer's close (queued when the
/// reader read it): closing the sink flushes that reply, so the closing
/// handshake completes (RFC 6455, 5.5.1) instead of the connection just
/// dropping. Other errors mean the socket is already gone.
pub(crate) async fn send_close(sink: &mut WsSink, code: u16, reason: &str) {
    let frame = CloseFrame {
        code,
        reason: reason.chars().take(120).collect::<String>().into(),
    };
    if sink.send(Message::Close(Some(frame))).await.is_err() {
        let _ = sink.close().await;
    }
}

/// The reader's ends while a call runs.
pub(crate) struct RouteIo {
    /// Frames and controls to the engine.
    inbound: InboundSender,
    /// Commands to the writer.
    pub(crate) cmd_tx: mpsc::Sender<WriterCmd>,
    state: Arc<AppState>,
    /// The call's recorder, when recording.
    recording: Option<RecordingTap>,
}

impl RouteIo {
    /// Queues a caller frame (320 samples at 16 kHz) that arrived at `at`;
    /// drops it (counted) when the engine is behind.
    pub(crate) fn push_frame(&self, samples: &[i16], at: Instant) {
        if let Some(tap) = &self.recording {
            tap.caller(samples, at);
        }
        if self.inbound.push_audio(samples, at) == Err(InboundRefused::Full) {
            self.state.metrics.input_frames_dropped_total.inc();
        }
    }

    /// Hands a control that arrived at `at` to the engine; a full control
    /// queue is answered with an `error` (`control_queue_full`), never dropped
    /// in silence.
    pub(crate) async fn push_control(&self, control: Control, at: Instant) {
        if self.inbound.push_control(control, at) == Err(InboundRefused::Full) {
            let ev = ServerEvent::Error {
                code: "control_queue_full".into(),
                message: "too many controls waiting for the engine; this one was dropped".into(),
            };
            let _ = self.cmd_tx.send(WriterCmd::Event(ev)).await;
        }
    }
}

/// Counts a finished (or never started) call and frees its slot.
pub(crate) fn finish(state: &AppState, outcome: Outcome, permit: CallPermit) {
    state
        .metrics
        .calls_total
        .with_label_values(&[outcome.label()])
        .inc();
    state.metrics.active_calls.dec();
    tracing::info!(outcome = outcome.label(), "call finished");
    drop(permit);
}

pub(crate) use crate::clock::now;

/// A call's event bus and its consumers: `/metrics`, the call log and the
/// call's trace (when tracing is on) observe every event synchronously
/// (nothing can be lost to them), the socket writer
/// reads its own queue of [`EVENT_QUEUE_CAPACITY`] events (what finds it full
/// is dropped for the writer only, counted and logged at the end).
fn call_events(
    metrics: &ServerMetrics,
    call_id: &str,
    trace: Option<Arc<CallTrace>>,
) -> (EventBus, EventReceiver) {
    let mut events = EventBus::new();
    events.observe(Arc::new(metrics.clone()));
    events.observe(Arc::new(CallLog::new(call_id)));
    if let Some(trace) = trace {
        events.observe(trace);
    }
    let writer = events.subscribe(EVENT_QUEUE_CAPACITY);
    (events, writer)
}

/// The result of a call handler's task.
type HandlerResult = Result<Result<CallEnd, CallFailed>, tokio::task::JoinError>;

/// How a driven call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ended {
    /// The outcome, as counted.
    pub(crate) outcome: Outcome,
    /// Where the handler transferred the call ([`Outcome::Transferred`]).
    pub(crate) transfer_to: Option<String>,
}

/// Runs an admitted, started call: spawns the writer and the handler on the
/// call's edge, runs the route's `reader` until the call ends from any side,
/// then closes and frees the call's slot ([`finish`]); returns how it ended.
pub(crate) async fn drive_call<W, F, Fut>(
    state: &Arc<AppState>,
    start: CallStart,
    permit: CallPermit,
    wire: W,
    reader: F,
) -> Ended
where
    W: Wire,
    F: FnOnce(RouteIo) -> Fut,
    Fut: Future<Output = Outcome> + Send,
{
    // Every log line of the call (route, writer, engine stages, providers)
    // is written inside this span, so it carries the call's id.
    let span = tracing::info_span!(
        "call",
        call_id = %start.call_id,
        transport = start.transport.name()
    );
    let (inbound, source) = inbound_queue(INBOUND_FRAMES, INBOUND_CONTROLS);
    let (sink, audio) = audio_queue(AUDIO_QUEUE_FRAMES);
    let sink = match wire.playout_confirmations() {
        Some(confirmations) => sink.with_playout_confirmations(confirmations),
        None => sink,
    };
    let trace = (state.telemetry.as_ref()).map(|t| t.call(&start.call_id, start.transport.name()));
    let (mut events, writer_events) = call_events(&state.metrics, &start.call_id, trace);
    let (cmd_tx, cmd_rx) = mpsc::channel(WRITER_CMD_QUEUE);
    let rate_hz = start.output_sample_rate_hz;
    let recording = crate::call_recording::start(
        state.agent.recording.as_ref(),
        &state.metrics,
        &start.call_id,
        rate_hz,
    );
    if let Some(tap) = &recording {
        events.observe(Arc::new(tap.clone()));
    }
    let writer_io = WriterIo {
        audio,
        events: writer_events,
        cmd_rx,
        rate_hz,
        recording: recording.clone(),
    };
    let writer = tokio::spawn(run_writer(wire, writer_io).instrument(span.clone()));
    let context = CallContext {
        call_id: start.call_id.clone(),
        transport: start.transport.name().to_owned(),
        metadata: start.metadata.clone(),
    };
    let edge = CallEdge::new(source, sink)
        .with_context(context)
        .with_events(events);
    let mut handler = tokio::spawn(state.handler.run_call(start, edge).instrument(span.clone()));
    let io = RouteIo {
        inbound,
        cmd_tx: cmd_tx.clone(),
        state: state.clone(),
        recording,
    };
    let mut reader = Box::pin(reader(io).instrument(span.clone()));
    let mut end_calls = state.end_calls.clone();
    let (outcome, handler_result) = tokio::select! {
        o = &mut reader => (o, None),
        // Gated, as the drain below: the select wakes for every message the
        // reader takes, the handler ends once (polling its join handle at
        // every message cost 0.8 % of the server's CPU at 600 calls).
        r = Gated::new(&mut handler) => (handler_outcome(&r), Some(r)),
        _ = Gated::new(end_calls.wait_for(|end| *end)) => (Outcome::Drained, None),
    };
    drop(reader); // closes the call's input: the engine sees the caller hang up
    let transfer_to = match &handler_result {
        Some(Ok(Ok(CallEnd::Transferred { to }))) => Some(to.clone()),
        _ => None,
    };
    let failure = match handler_result {
        Some(r) => failure_of(r),
        None => await_handler(handler).await,
    };
    close_call(cmd_tx, writer, outcome, failure)
        .instrument(span.clone())
        .await;
    span.in_scope(|| finish(state, outcome, permit));
    Ended {
        outcome,
        transfer_to,
    }
}

/// Waits for a handler whose input closed, aborting it after the grace.
async fn await_handler(
    mut handler: tokio::task::JoinHandle<Result<CallEnd, CallFailed>>,
) -> Option<CallFailed> {
    match tokio::time::timeout(HANDLER_EXIT_GRACE, &mut handler).await {
        Ok(r) => failure_of(r),
        Err(_) => {
            tracing::warn!("the call handler did not return after its input closed; aborted");
            handler.abort();
            None
        }
    }
}

fn failure_of(r: HandlerResult) -> Option<CallFailed> {
    match r {
        Ok(Ok(_)) => None,
        Ok(Err(failed)) => Some(failed),
        Err(join) => Some(CallFailed {
            reason: format!("the call task failed: {join}"),
        }),
    }
}

fn handler_outcome(r: &HandlerResult) -> Outcome {
    match r {
        Ok(Ok(end)) => Outcome::of_handler(end),
        _ => Outcome::HandlerError,
    }
}

/// Tells the client why the call ended, closes, and waits for the writer.
async fn close_call(
    cmd_tx: mpsc::Sender<WriterCmd>,
    mut writer: tokio::task::JoinHandle<()>,
    outcome: Outcome,
    failure: Option<CallFailed>,
) {
    if let Some(failed) = failure {
        tracing::warn!(reason = %failed.reason, "call failed");
        let ev = ServerEvent::Error {
            code: "call_failed".into(),
            message: failed.reason,
        };
        let _ = cmd_tx.send(WriterCmd::Event(ev)).await;
    }
    let reason = (outcome != Outcome::Disconnected).then(|| outcome.label().to_owned());
    let code = outcome.close_code();
    let _ = cmd_tx.send(WriterCmd::Close { reason, code }).await;
    if tokio::time::timeout(WRITER_EXIT_GRACE, &mut writer)
        .await
        .is_err()
    {
        tracing::warn!("the socket writer did not finish in time; aborted");
        writer.abort();
    }
}

/// A call's socket writer: the engine's audio and events, the route's
/// commands, through the route's [`Wire`].
struct Writer<W> {
    wire: W,
    audio: AudioQueueReceiver,
    events: EventReceiver,
    mapping: WireEvents,
    rate_hz: u32,
    /// The call's recorder, fed each frame and clear as written.
    recording: Option<RecordingTap>,
    /// The socket failed: nothing more is written.
    broken: bool,
    /// Frames dropped for a rate other than the transport's.
    wrong_rate: u64,
}

/// What the writer reads from, besides its wire.
struct WriterIo {
    audio: AudioQueueReceiver,
    events: EventReceiver,
    cmd_rx: mpsc::Receiver<WriterCmd>,
    rate_hz: u32,
    recording: Option<RecordingTap>,
}

/// Runs a call's writer until the route sends `Close`.
async fn run_writer<W: Wire>(wire: W, io: WriterIo) {
    let WriterIo {
        audio,
        events,
        mut cmd_rx,
        rate_hz,
        recording,
    } = io;
    let mut w = Writer {
        wire,
        audio,
        events,
        mapping: WireEvents::default(),
        rate_hz,
        recording,
        broken: false,
        wrong_rate: 0,
    };
    let (mut audio_open, mut events_open) = (true, true);
    // The writer wakes for every frame of an answer; commands and engine
    // events are rarer, so their queues are polled only once they woke.
    let (mut cmd_gate, mut events_gate) = (Gate::new(), Gate::new());
    loop {
        tokio::select! {
            biased;
            cmd = poll_fn(|cx| cmd_gate.poll_with(cx, |cx| cmd_rx.poll_recv(cx))) => match cmd {
                Some(WriterCmd::Event(ev)) => w.event(&ev).await,
                Some(WriterCmd::MarkEcho(name)) => w.wire.mark_echo(&name),
                Some(WriterCmd::Close { reason, code }) => return w.close(reason, code).await,
                None => return,
            },
            item = w.audio.recv(), if audio_open => match item {
                Some(item) => w.audio_item(item).await,
                None => audio_open = false,
            },
            event = poll_fn(|cx| events_gate.poll_with(cx, |cx| w.events.poll_recv(cx))), if events_open => match event {
                Some(event) => w.engine_event(event).await,
                None => events_open = false,
            },
        }
    }
}

impl<W: Wire> Writer<W> {
    async fn audio_item(&mut self, item: QueuedAudio) {
        if self.broken {
            return;
        }
        let res = match item {
            QueuedAudio::Frame { frame, .. } if frame.sample_rate_hz() != self.rate_hz => {
                if self.wrong_rate == 0 {
                    tracing::warn!(
                        rate_hz = frame.sample_rate_hz(),
                        transport_hz = self.rate_hz,
                        "answer audio at another rate than the transport's; dropped"
                    );
                }
                self.wrong_rate += 1;
                return;
            }
            QueuedAudio::Frame { epoch, frame } => {
                if let Some(tap) = &self.recording {
                    tap.bot(&frame);
                }
                self.wire.audio(epoch, &frame).await
            }
            QueuedAudio::Clear { .. } => {
                if let Some(tap) = &self.recording {
                    tap.cleared();
                }
                self.wire.clear().await
            }
        };
        self.broken = res.is_err();
    }

    async fn engine_event(&mut self, event: brisvox_engine::EngineEvent) {
        if let Some(ev) = self.mapping.map(event) {
            self.event(&ev).await;
        }
    }

    async fn event(&mut self, ev: &ServerEvent) {
        if !self.broken {
            self.broken = self.wire.event(ev).await.is_err();
        }
    }

    /// Writes what the engine queued before the end, then `end` and close.
    async fn close(mut self, reason: Option<String>, code: u16) {
        while let Some(item) = self.audio.try_recv() {
            self.audio_item(item).await;
        }
        while let Some(event) = self.events.try_recv() {
            self.engine_event(event).await;
        }
        if self.events.dropped() > 0 {
            tracing::warn!(
                dropped = self.events.dropped(),
                "events the socket writer could not keep up with"
            );
        }
        self.wire.close(reason, code).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_that_never_reads_costs_the_metrics_nothing() {
        use brisvox_core::timeline::{TimelineRecorder, TurnEvent};
        use brisvox_engine::EngineEvent;

        let metrics = ServerMetrics::new();
        let (bus, writer) = call_events(&metrics, "c1", None);
        for _ in 0..2 * EVENT_QUEUE_CAPACITY {
            bus.emit(EngineEvent::BotSpeakingStarted { epoch: Epoch(1) });
        }
        #[allow(clippy::disallowed_methods)] // a test origin
        let t0 = Instant::now();
        let mut rec = TimelineRecorder::new();
        rec.mark(Epoch(1), TurnEvent::UserSpeechStart, t0);
        rec.mark(Epoch(1), TurnEvent::UserSpeechEnd, t0);
        rec.mark(
            Epoch(1),
            TurnEvent::FirstAudioOut,
            t0 + Duration::from_millis(700),
        );
        let record = Box::new(rec.open_turn().expect("open").clone());
        bus.emit(EngineEvent::TurnMetrics { record });
        assert!(
            writer.dropped() > EVENT_QUEUE_CAPACITY as u64,
            "the writer's queue was full"
        );
        let text = metrics.render();
        assert!(
            text.contains("brisvox_turn_response_latency_seconds_count 1"),
            "{text}"
        );
    }

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
            Outcome::Unauthorized,
            Outcome::Transferred,
        ];
        for o in all {
            assert!(crate::metrics::CALL_OUTCOMES.contains(&o.label()), "{o:?}");
        }
        assert_eq!(all.len(), crate::metrics::CALL_OUTCOMES.len());
    }
}
