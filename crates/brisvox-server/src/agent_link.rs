//! The agent link of each call (`[agent_link] url`, docs/AGENT_PROTOCOL.md):
//! the server opens a websocket to the agent for every call and wires it to
//! the call's edge.
//!
//! - **Events out**: [`LinkObserver`] is an [`EventObserver`] of the call's
//!   [`brisvox_engine::EventBus`]: each engine event worth telling the agent
//!   becomes a protocol [`Event`] handed to the link without waiting (the
//!   link's bounded inbox drops and counts when full; the media path never
//!   waits for the agent).
//! - **Commands in**: [`serve_commands`] turns the agent's commands into the
//!   engine's [`Control`]s (`say`, `context.update`, `respond`, the hang-up
//!   of `call.end`, the transfer of `call.transfer`), which reach the engine
//!   through [`LinkedSource`], the route's source with the agent's controls
//!   merged in; `tools.set` changes the tools the model is offered from its
//!   next completion on.
//! - **Tools**: [`AgentTools`] is the [`ToolExecutor`] of the tools the agent
//!   declared: a call is a `tool.call` event answered by `tool.result` (an
//!   error result when the link is down, and the engine's tool timeout
//!   above it). [`CallTools`] puts the agent file's webhooks beside them.
//! - **Statistics**: each call's [`LinkStats`] (hops measured by the link,
//!   events dropped, reconnects) are logged when the call ends and added to
//!   the process totals `/metrics` shows ([`AgentLinkTotals`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use brisvox_agent_link::{
    AgentLink, AgentLinkConfig, Command, CommandFrame, ContextRole, Event, LinkHandle, LinkStats,
    PROTOCOL_VERSION, ToolSpec,
};
use brisvox_engine::gate::Gate;
use brisvox_engine::{
    CallEnd, CallSource, ContextUpdate, Control, EngineEvent, EventObserver, Inbound,
    MessagesUpdate, ToolExecutor, ToolInvocation, ToolOutcome,
};
use brisvox_providers::{BoxFuture, Message, ToolDefinition};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::after_say::AfterSay;
use crate::agent::{AgentLinkSettings, TransferDestination};
use crate::handler::{CallStart, CallTransport};
use crate::transfer_tool::TransferTool;
use crate::webhook::CallWebhooks;

/// Controls from the agent waiting for the engine, at most.
const CONTROL_CAPACITY: usize = 16;
/// Longest `call.end` or `call.transfer` with `say` waits for the say to play out.
const GOODBYE_LIMIT: Duration = Duration::from_secs(30);
/// Longest the end of a call waits for the link to send `call.ended`.
const CLOSE_LIMIT: Duration = Duration::from_secs(2);

/// Every call's link statistics added together (what `/metrics` shows).
pub type AgentLinkTotals = Arc<Mutex<LinkStats>>;

/// The process's agent link: where the agent is, and the totals.
#[derive(Debug, Clone)]
pub struct AgentLinks {
    config: AgentLinkConfig,
    totals: AgentLinkTotals,
}

impl AgentLinks {
    /// The link of `[agent_link]`, or `None` when it names no URL.
    pub fn new(settings: &AgentLinkSettings) -> Option<Self> {
        let url = settings.url.clone()?;
        let mut config = AgentLinkConfig::new(url);
        config.connect_timeout = Duration::from_millis(u64::from(settings.connect_timeout_ms));
        Some(AgentLinks {
            config,
            totals: AgentLinkTotals::default(),
        })
    }

    /// The totals every call's statistics are added to.
    pub fn totals(&self) -> AgentLinkTotals {
        Arc::clone(&self.totals)
    }

    /// Opens the link of the call `start` (in the background: the call does
    /// not wait for the agent).
    pub fn start(&self, start: &CallStart) -> CallAgentLink {
        let (handle, commands, task) = AgentLink::start(self.config.clone(), call_started(start));
        let (controls_tx, controls) = mpsc::channel(CONTROL_CAPACITY);
        let tools = Arc::new(AgentTools::new(handle.clone()));
        let goodbye = AfterSay::new(controls_tx.clone());
        let asked = Arc::new(AtomicBool::new(false));
        let server = tokio::spawn(serve_commands(CommandContext {
            commands,
            controls: controls_tx,
            handle: handle.clone(),
            tools: Arc::clone(&tools),
            goodbye: Arc::clone(&goodbye),
            asked: Arc::clone(&asked),
            transfers: transfer_destinations(start),
        }));
        CallAgentLink {
            observer: Arc::new(LinkObserver {
                handle: handle.clone(),
                goodbye,
                asked,
            }),
            controls: Some(controls),
            handle,
            tools,
            task,
            server,
            totals: self.totals(),
            call_id: start.call_id.clone(),
        }
    }
}

/// The `call.started` event of a call.
fn call_started(start: &CallStart) -> Event {
    // `call` for the brisvox protocol, else the carrier (`twilio`, `telnyx`, ...).
    let route = match &start.transport {
        CallTransport::BrisvoxWs { .. } => "call",
        other => other.name(),
    };
    let caller = ["caller", "from"]
        .iter()
        .find_map(|k| start.metadata.get(*k).and_then(Value::as_str))
        .map(str::to_owned);
    Event::CallStarted {
        protocol: PROTOCOL_VERSION,
        call_id: start.call_id.clone(),
        route: route.to_owned(),
        caller,
        metadata: Value::Object(start.metadata.clone()),
        resumed: false,
    }
}

/// One call's link, as its handler holds it.
#[derive(Debug)]
pub struct CallAgentLink {
    observer: Arc<LinkObserver>,
    controls: Option<mpsc::Receiver<Control>>,
    handle: LinkHandle,
    tools: Arc<AgentTools>,
    task: JoinHandle<LinkStats>,
    server: JoinHandle<()>,
    totals: AgentLinkTotals,
    call_id: String,
}

impl CallAgentLink {
    /// The observer to add to the call's events.
    pub fn observer(&self) -> Arc<dyn EventObserver> {
        self.observer.clone()
    }

    /// The agent's controls, to merge into the call's source (once).
    pub fn take_controls(&mut self) -> Option<mpsc::Receiver<Control>> {
        self.controls.take()
    }

    /// The executor of the agent's tools.
    pub fn tools(&self) -> Arc<AgentTools> {
        Arc::clone(&self.tools)
    }

    /// The call ended (`end`, or `None` when it failed): sends `call.ended`,
    /// waits a little for the link to close, and books its statistics.
    pub async fn finish(self, end: Option<&CallEnd>) {
        let reason = end_reason(end, self.observer.asked.load(Ordering::Relaxed));
        self.handle.end(reason);
        self.server.abort();
        let stats = match tokio::time::timeout(CLOSE_LIMIT, self.task).await {
            Ok(Ok(stats)) => stats,
            // Too slow to close or gone: the counters of this call are lost.
            _ => return,
        };
        let us = |d: Option<Duration>| d.map(|d| d.as_micros() as u64);
        tracing::info!(
            call_id = %self.call_id,
            hops = stats.hops,
            hop_p50_us = us(stats.hop_quantile(0.5)),
            hop_p99_us = us(stats.hop_quantile(0.99)),
            hop_max_us = stats.hop_max_us,
            events_sent = stats.events_sent,
            events_dropped = stats.events_dropped + self.handle.dropped(),
            connects = stats.connects,
            connect_failures = stats.connect_failures,
            "agent link finished"
        );
        self.totals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .merge(&stats);
    }
}

/// `call.ended`'s `reason`.
fn end_reason(end: Option<&CallEnd>, agent_asked: bool) -> &'static str {
    match end {
        Some(CallEnd::Hangup) => "hangup",
        Some(CallEnd::Requested) if agent_asked => "agent",
        Some(CallEnd::Requested) => "requested",
        Some(CallEnd::Machine(brisvox_engine::turn::EndReason::Idle)) => "idle",
        Some(CallEnd::Machine(brisvox_engine::turn::EndReason::MaxDuration)) => "max_duration",
        Some(CallEnd::SttLost) => "stt_lost",
        Some(CallEnd::TransportClosed) => "transport_closed",
        Some(CallEnd::Transferred { .. }) => "transferred",
        None => "error",
    }
}

fn hangup() -> Control {
    Control::Hangup {
        reason: "agent".to_owned(),
    }
}

/// Hands the call's events to its link (synchronously, never waiting).
#[derive(Debug)]
struct LinkObserver {
    handle: LinkHandle,
    goodbye: Arc<AfterSay>,
    asked: Arc<AtomicBool>,
}

impl EventObserver for LinkObserver {
    fn observe(&self, event: &EngineEvent) {
        self.goodbye.observe(event);
        if let Some(event) = link_event(event) {
            self.handle.event(event);
        }
    }
}

/// The protocol event for an engine event, if the agent is told of it.
/// (`call.started` and `call.ended` are the link's own; `tool.call` is sent
/// for the agent's tools by [`AgentTools`].)
fn link_event(event: &EngineEvent) -> Option<Event> {
    Some(match event {
        EngineEvent::UserStartedSpeaking => Event::UserStartedSpeaking {},
        EngineEvent::UserStoppedSpeaking => Event::UserStoppedSpeaking {},
        EngineEvent::Transcript { text, is_final } => Event::UserTranscript {
            text: text.clone(),
            is_final: *is_final,
        },
        EngineEvent::BotText { epoch, text } => Event::BotText {
            turn: epoch.0,
            text: text.clone(),
        },
        EngineEvent::BotSpeakingStarted { epoch } => Event::BotStartedSpeaking { turn: epoch.0 },
        EngineEvent::BotSpeakingStopped { epoch } => Event::BotStoppedSpeaking { turn: epoch.0 },
        EngineEvent::Heard { epoch, heard, .. } => Event::BotInterrupted {
            turn: epoch.0,
            heard: heard.clone(),
        },
        EngineEvent::Dtmf { digit } => Event::Dtmf {
            digits: digit.as_char().to_string(),
        },
        EngineEvent::TurnMetrics { record } => Event::TurnMetrics {
            turn: record.epoch().0,
            metrics_ms: metrics_ms(record),
        },
        EngineEvent::ControlRejected { message, .. } => Event::Error {
            re: None,
            message: message.clone(),
        },
        _ => return None,
    })
}

/// A turn's metrics by name (the websocket protocol's names without `_ms`).
fn metrics_ms(record: &brisvox_core::timeline::TurnRecord) -> serde_json::Map<String, Value> {
    let metrics = crate::wire_events::turn_metrics_ms(record);
    let Ok(Value::Object(all)) = serde_json::to_value(metrics) else {
        return serde_json::Map::new();
    };
    all.into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.trim_end_matches("_ms").to_owned(), v))
        .collect()
}

/// What the command server works with.
struct CommandContext {
    commands: mpsc::Receiver<CommandFrame>,
    controls: mpsc::Sender<Control>,
    handle: LinkHandle,
    tools: Arc<AgentTools>,
    /// The say of a `call.end` or `call.transfer`: the hang-up or the
    /// transfer once it played.
    goodbye: Arc<AfterSay>,
    /// The agent asked to end the call.
    asked: Arc<AtomicBool>,
    /// Where a `call.transfer` may name by name (`[telephony.transfer]`);
    /// `None` on a call without a carrier to transfer through.
    transfers: Option<Vec<TransferDestination>>,
}

/// The `[telephony.transfer]` destinations of a phone call (none when the
/// file has none); `None` when the call has no carrier.
fn transfer_destinations(start: &CallStart) -> Option<Vec<TransferDestination>> {
    let CallTransport::Carrier { .. } = start.transport else {
        return None;
    };
    let settings = start.agent.telephony.transfer.as_ref();
    Some(settings.map(|t| t.destinations.clone()).unwrap_or_default())
}

/// Where a `call.transfer` to `to` goes: the number of the destination of
/// that name, else `to` itself when it is an E.164 number or a `sip:` URI.
fn transfer_target(
    destinations: Option<&[TransferDestination]>,
    to: &str,
) -> Result<String, String> {
    let Some(destinations) = destinations else {
        return Err(
            "call.transfer needs a phone call (a carrier route); this call has none".to_owned(),
        );
    };
    if let Some(d) = destinations.iter().find(|d| d.name == to) {
        return Ok(d.to.clone());
    }
    match brisvox_transport::carrier::control::TransferTarget::parse(to) {
        Ok(_) => Ok(to.to_owned()),
        Err(e) => Err(format!(
            "call.transfer: {to:?} names no [telephony.transfer] destination, and {e}"
        )),
    }
}

/// Carries out the agent's commands until the link ends.
async fn serve_commands(mut cx: CommandContext) {
    while let Some(CommandFrame { re, command }) = cx.commands.recv().await {
        match command {
            Command::Say { text, interrupt } => {
                let _ = cx.controls.send(Control::Say { text, interrupt }).await;
            }
            Command::ContextUpdate {
                system_prompt,
                messages,
            } => {
                let update = context_update(system_prompt, messages);
                let _ = cx.controls.send(Control::Context(update)).await;
            }
            Command::ToolsSet { tools } => cx.tools.set(&tools),
            Command::Respond {} => {
                let _ = cx.controls.send(Control::Respond).await;
            }
            Command::CallEnd {
                say: Some(text), ..
            } if !text.trim().is_empty() => {
                cx.asked.store(true, Ordering::Relaxed);
                cx.goodbye.say_then(text, hangup(), GOODBYE_LIMIT).await;
            }
            Command::CallEnd { .. } => {
                cx.asked.store(true, Ordering::Relaxed);
                let _ = cx.controls.send(hangup()).await;
            }
            Command::CallTransfer { to, say } => {
                match transfer_target(cx.transfers.as_deref(), &to) {
                    Ok(to) => {
                        let then = Control::Transfer { to };
                        match say.filter(|s| !s.trim().is_empty()) {
                            Some(text) => cx.goodbye.say_then(text, then, GOODBYE_LIMIT).await,
                            None => {
                                let _ = cx.controls.send(then).await;
                            }
                        }
                    }
                    Err(message) => cx.handle.event(Event::Error { re, message }),
                }
            }
            other => cx.handle.event(Event::Error {
                re,
                message: format!("{} is not served by this server", other.type_name()),
            }),
        }
    }
}

fn context_update(
    system_prompt: Option<String>,
    messages: Option<brisvox_agent_link::MessagesUpdate>,
) -> ContextUpdate {
    ContextUpdate {
        system_prompt,
        messages: messages.map(|m| MessagesUpdate {
            replace: m.mode == brisvox_agent_link::MessagesMode::Replace,
            items: m
                .items
                .into_iter()
                .map(|item| match item.role {
                    ContextRole::System => Message::system(item.content),
                    ContextRole::User => Message::user(item.content),
                    ContextRole::Assistant => Message::assistant(item.content),
                })
                .collect(),
        }),
    }
}

/// The tools the agent declared with `tools.set`, run over its link.
#[derive(Debug)]
pub struct AgentTools {
    handle: LinkHandle,
    definitions: RwLock<Arc<[ToolDefinition]>>,
}

impl AgentTools {
    fn new(handle: LinkHandle) -> Self {
        AgentTools {
            handle,
            definitions: RwLock::new(Arc::from([])),
        }
    }

    /// Replaces the agent's tools (already checked by the link).
    fn set(&self, tools: &[ToolSpec]) {
        let definitions: Arc<[ToolDefinition]> = tools
            .iter()
            .map(|t| ToolDefinition {
                name: Arc::from(t.name.as_str()),
                description: Arc::from(t.description.as_str()),
                parameters: Arc::new(t.parameters.clone()),
            })
            .collect();
        *self
            .definitions
            .write()
            .unwrap_or_else(PoisonError::into_inner) = definitions;
    }
}

impl ToolExecutor for AgentTools {
    fn definitions(&self) -> Arc<[ToolDefinition]> {
        Arc::clone(
            &self
                .definitions
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    fn invoke(&self, call: ToolInvocation) -> BoxFuture<'static, ToolOutcome> {
        let handle = self.handle.clone();
        Box::pin(async move {
            let answer = handle
                .call_tool(call.epoch.0, &call.call_id, &call.name, &call.arguments)
                .await;
            match answer {
                Ok(result) => ToolOutcome::ok(result.to_string()),
                Err(reason) => ToolOutcome::error(reason),
            }
        })
    }
}

/// A call's tools: the built-in `transfer_call`, the agent file's webhooks,
/// then the agent's own (a name declared twice is the first one's).
#[derive(Debug)]
pub struct CallTools {
    /// `[telephony.transfer]`'s `transfer_call` (phone calls only).
    pub transfer: Option<Arc<TransferTool>>,
    /// The agent file's `[[tools]]`.
    pub webhooks: Option<CallWebhooks>,
    /// The agent link's tools.
    pub agent: Option<Arc<AgentTools>>,
}

impl CallTools {
    /// The executors, in order of precedence.
    fn executors(&self) -> impl Iterator<Item = &dyn ToolExecutor> {
        let transfer = self.transfer.as_deref().map(|t| t as &dyn ToolExecutor);
        let webhooks = self.webhooks.as_ref().map(|w| w as &dyn ToolExecutor);
        let agent = self.agent.as_deref().map(|a| a as &dyn ToolExecutor);
        [transfer, webhooks, agent].into_iter().flatten()
    }
}

impl ToolExecutor for CallTools {
    fn definitions(&self) -> Arc<[ToolDefinition]> {
        let mut sets = self.executors().map(ToolExecutor::definitions);
        let Some(first) = sets.next() else {
            return Arc::from([]);
        };
        let mut all: Option<Vec<ToolDefinition>> = None;
        for set in sets {
            let list = all.get_or_insert_with(|| first.to_vec());
            for tool in set.iter() {
                if !list.iter().any(|d| d.name == tool.name) {
                    list.push(tool.clone());
                }
            }
        }
        all.map_or(first, Arc::from)
    }

    fn invoke(&self, call: ToolInvocation) -> BoxFuture<'static, ToolOutcome> {
        let serving = self
            .executors()
            .find(|e| e.definitions().iter().any(|d| d.name == call.name))
            // The agent's tools may change under the model: the last executor answers.
            .or_else(|| self.executors().last());
        match serving {
            Some(executor) => executor.invoke(call),
            None => {
                let outcome = ToolOutcome::error(format!("unknown tool {}", call.name));
                Box::pin(std::future::ready(outcome))
            }
        }
    }
}

/// The route's source with the agent's controls (and the server's own, from
/// its built-in tools) merged in. The call ends when the route's source
/// does; the other sides may end first.
#[derive(Debug)]
pub struct LinkedSource<S> {
    route: S,
    agent: Option<mpsc::Receiver<Control>>,
    server: Option<mpsc::Receiver<Control>>,
    /// The control receivers are polled only once they woke: the route's
    /// source gives a frame every 20 ms, controls are rare.
    agent_gate: Gate,
    server_gate: Gate,
}

impl<S: CallSource> LinkedSource<S> {
    /// `route`, with `agent`'s controls when the call has a link.
    pub fn new(route: S, agent: Option<mpsc::Receiver<Control>>) -> Self {
        LinkedSource {
            route,
            agent,
            server: None,
            agent_gate: Gate::new(),
            server_gate: Gate::new(),
        }
    }

    /// Also merges `server`'s controls (the built-in tools').
    pub fn with_server_controls(mut self, server: Option<mpsc::Receiver<Control>>) -> Self {
        self.server = server;
        self
    }
}

/// The next control of `rx`, polled through `gate`; never ready without one.
async fn next_control(
    rx: &mut Option<mpsc::Receiver<Control>>,
    gate: &mut Gate,
) -> Option<Control> {
    match rx {
        Some(rx) => std::future::poll_fn(|cx| gate.poll_with(cx, |cx| rx.poll_recv(cx))).await,
        None => std::future::pending().await,
    }
}

impl<S: CallSource> CallSource for LinkedSource<S> {
    /// # Cancel safety
    ///
    /// Cancel safe: both receivers are, and an item is taken only when returned.
    async fn recv(&mut self) -> Option<Inbound> {
        loop {
            if self.agent.is_none() && self.server.is_none() {
                return self.route.recv().await;
            }
            let control = tokio::select! {
                biased;
                item = self.route.recv() => return item,
                control = next_control(&mut self.agent, &mut self.agent_gate) => match control {
                    Some(control) => control,
                    None => {
                        self.agent = None;
                        continue;
                    }
                },
                control = next_control(&mut self.server, &mut self.server_gate) => match control {
                    Some(control) => control,
                    None => {
                        self.server = None;
                        continue;
                    }
                },
            };
            let at = tokio::time::Instant::now().into_std();
            return Some(Inbound::Control { control, at });
        }
    }
}

/// Writes the agent link series of `/metrics` from the process totals (in
/// base units: the hop histogram in seconds).
pub fn render_totals(totals: &LinkStats, out: &mut String) {
    use std::fmt::Write as _;
    let name = "brisvox_agent_link_hop_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} Agent link hops: an event taken from the call to the first command answering it; added when each call ends."
    );
    let _ = writeln!(out, "# TYPE {name} histogram");
    let mut seen = 0;
    for (bound, count) in brisvox_agent_link::HOP_BUCKETS_US
        .iter()
        .zip(&totals.hop_buckets)
    {
        seen += count;
        let le = *bound as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {seen}");
    }
    let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", totals.hops);
    let _ = writeln!(out, "{name}_sum {}", totals.hop_total_us as f64 / 1e6);
    let _ = writeln!(out, "{name}_count {}", totals.hops);
    for (what, help, value) in [
        (
            "events_sent",
            "Events written to agents.",
            totals.events_sent,
        ),
        (
            "events_dropped",
            "Events dropped because an agent link's queue was full.",
            totals.events_dropped,
        ),
        ("commands", "Commands parsed.", totals.commands),
        (
            "commands_refused",
            "Command frames refused.",
            totals.commands_refused,
        ),
        ("connects", "Agent connections made.", totals.connects),
        (
            "connect_failures",
            "Agent connection attempts that failed.",
            totals.connect_failures,
        ),
        (
            "tool_results",
            "Tool calls answered by agents.",
            totals.tool_results,
        ),
        (
            "tool_calls_failed",
            "Tool calls failed because the link was down or gone.",
            totals.tool_calls_failed_by_link,
        ),
    ] {
        let name = format!("brisvox_agent_link_{what}_total");
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} counter");
        let _ = writeln!(out, "{name} {value}");
    }
}
