//! The async shell around [`LinkCore`]: one task per call that owns the
//! websocket to the agent.
//!
//! [`AgentLink::start`] spawns the task and returns a [`LinkHandle`] (what the
//! call uses: events, tool calls, the end) and the receiver of the agent's
//! commands. The handle never waits: events go into a bounded inbox with
//! `try_send` (a full inbox drops the event, counted), so a slow or absent
//! agent never holds up the call. The task turns inbox items, socket frames
//! and the core's timer into core inputs and the core's outputs into socket
//! writes, commands and tool results; it ends after `call.ended` is written
//! (or the link is gone and the call ended) and returns its [`LinkStats`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::core::{LinkConfig, LinkCore, Output};
use crate::protocol::{CommandFrame, Event};
use crate::stats::LinkStats;

/// Items waiting in the link's inbox, at most.
pub const INBOX_CAPACITY: usize = 256;
/// Commands waiting for the call, at most (the link waits for room).
pub const COMMAND_CAPACITY: usize = 64;

/// Where and how to reach the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentLinkConfig {
    /// The agent's websocket URL (`ws://` or `wss://`).
    pub url: String,
    /// Longest a connection attempt may take (counted as a failed attempt).
    pub connect_timeout: Duration,
    /// Queue, backoff and attempt limits.
    pub link: LinkConfig,
}

impl AgentLinkConfig {
    /// `url` with the default limits (2 s per connection attempt).
    pub fn new(url: impl Into<String>) -> Self {
        AgentLinkConfig {
            url: url.into(),
            connect_timeout: Duration::from_secs(2),
            link: LinkConfig::default(),
        }
    }
}

/// What the call hands the link.
#[derive(Debug)]
enum ToLink {
    Event(Event, Instant),
    ToolCall {
        turn: u64,
        call_id: String,
        name: String,
        arguments: String,
        reply: oneshot::Sender<Result<Value, String>>,
        at: Instant,
    },
    End(String),
}

/// The call's side of its agent link. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LinkHandle {
    tx: mpsc::Sender<ToLink>,
    dropped: Arc<AtomicU64>,
}

impl LinkHandle {
    /// Offers an event taken from the call now; never waits (a full inbox
    /// drops it, counted in [`LinkHandle::dropped`]).
    pub fn event(&self, event: Event) {
        self.offer(ToLink::Event(event, now()));
    }

    /// Sends `tool.call` and waits for the agent's `tool.result`: `Err` with
    /// a reason when the agent answered with an error, or the link is down,
    /// gone or full.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future forgets the answer.
    pub async fn call_tool(
        &self,
        turn: u64,
        call_id: &str,
        name: &str,
        arguments: &str,
    ) -> Result<Value, String> {
        let (reply, answer) = oneshot::channel();
        let item = ToLink::ToolCall {
            turn,
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
            reply,
            at: now(),
        };
        if self.tx.try_send(item).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return Err("the agent link is busy".to_owned());
        }
        answer
            .await
            .unwrap_or_else(|_| Err("the agent link ended".to_owned()))
    }

    /// The call ended: the link sends `call.ended` and closes.
    pub fn end(&self, reason: &str) {
        self.offer(ToLink::End(reason.to_owned()));
    }

    /// Items the inbox had no room for.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn offer(&self, item: ToLink) {
        if self.tx.try_send(item).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Starts agent links.
#[derive(Debug)]
pub struct AgentLink;

impl AgentLink {
    /// Spawns the link of one call that starts with `call_started` (an
    /// [`Event::CallStarted`]). Returns the handle, the agent's commands and
    /// the task, which ends with the link's counters. Must run in a tokio
    /// runtime.
    pub fn start(
        config: AgentLinkConfig,
        call_started: Event,
    ) -> (
        LinkHandle,
        mpsc::Receiver<CommandFrame>,
        JoinHandle<LinkStats>,
    ) {
        let (tx, inbox) = mpsc::channel(INBOX_CAPACITY);
        let (commands_tx, commands) = mpsc::channel(COMMAND_CAPACITY);
        let core = LinkCore::new(config.link.clone(), call_started, now());
        let task = LinkTask {
            core,
            config,
            inbox,
            commands: commands_tx,
            replies: HashMap::new(),
            ws: None,
            ended: false,
        };
        let handle = LinkHandle {
            tx,
            dropped: Arc::default(),
        };
        (handle, commands, tokio::spawn(task.run()))
    }
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;
type Connecting = std::pin::Pin<Box<dyn std::future::Future<Output = Option<Socket>> + Send>>;

struct LinkTask {
    core: LinkCore,
    config: AgentLinkConfig,
    inbox: mpsc::Receiver<ToLink>,
    commands: mpsc::Sender<CommandFrame>,
    replies: HashMap<String, oneshot::Sender<Result<Value, String>>>,
    ws: Option<Socket>,
    ended: bool,
}

impl LinkTask {
    async fn run(mut self) -> LinkStats {
        let mut connecting: Option<Connecting> = None;
        loop {
            if self.drive(&mut connecting).await {
                break;
            }
            let deadline = self.core.poll_timeout();
            tokio::select! {
                item = self.inbox.recv(), if !self.ended => self.on_item(item),
                socket = wait_connect(&mut connecting), if connecting.is_some() => {
                    connecting = None;
                    match socket {
                        Some(ws) => {
                            self.ws = Some(ws);
                            self.core.handle_connected(now());
                        }
                        None => self.core.handle_connect_failed(now()),
                    }
                }
                frame = next_frame(&mut self.ws), if self.ws.is_some() => self.on_frame(frame),
                () = sleep_until(deadline), if deadline.is_some() => {
                    self.core.handle_timeout(now());
                }
            }
        }
        self.core.stats()
    }

    /// Carries out the core's outputs; true when the link is finished.
    async fn drive(&mut self, connecting: &mut Option<Connecting>) -> bool {
        while let Some(output) = self.core.poll_output() {
            match output {
                Output::Connect => *connecting = Some(connect(&self.config)),
                Output::Send(text) => self.write(text).await,
                Output::Command(command) => {
                    // The call's side is gone: nothing left to command.
                    let _ = self.commands.send(command).await;
                }
                Output::ToolResult { call_id, outcome } => {
                    if let Some(reply) = self.replies.remove(&call_id) {
                        let _ = reply.send(outcome);
                    }
                }
                Output::Close => {
                    if let Some(mut ws) = self.ws.take() {
                        let _ = ws.close(None).await;
                    }
                    return true;
                }
            }
        }
        false
    }

    async fn write(&mut self, text: String) {
        let Some(ws) = self.ws.as_mut() else {
            return;
        };
        if ws.send(Message::text(text)).await.is_err() {
            self.ws = None;
            self.core.handle_disconnected(now());
        }
    }

    fn on_item(&mut self, item: Option<ToLink>) {
        match item {
            Some(ToLink::Event(event, at)) => {
                self.core.handle_event(at, event);
            }
            Some(ToLink::ToolCall {
                turn,
                call_id,
                name,
                arguments,
                reply,
                at,
            }) => {
                self.replies.insert(call_id.clone(), reply);
                self.core
                    .handle_tool_call(at, turn, &call_id, &name, &arguments);
            }
            Some(ToLink::End(reason)) => {
                self.ended = true;
                self.core.handle_call_ended(now(), &reason);
            }
            None => {
                self.ended = true;
                self.core.handle_call_ended(now(), "hangup");
            }
        }
    }

    fn on_frame(&mut self, frame: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>) {
        match frame {
            Some(Ok(Message::Text(text))) => self.core.handle_text(now(), text.as_str()),
            Some(Ok(
                Message::Binary(_) | Message::Ping(_) | Message::Pong(_) | Message::Frame(_),
            )) => {}
            Some(Ok(Message::Close(_)) | Err(_)) | None => {
                self.ws = None;
                self.core.handle_disconnected(now());
            }
        }
    }
}

fn connect(config: &AgentLinkConfig) -> Connecting {
    let url = config.url.clone();
    let limit = config.connect_timeout;
    Box::pin(async move {
        match tokio::time::timeout(limit, tokio_tungstenite::connect_async(url)).await {
            Ok(Ok((ws, _))) => Some(ws),
            _ => None,
        }
    })
}

/// # Cancel safety
///
/// Cancel safe: the attempt stays in place until it resolves.
async fn wait_connect(connecting: &mut Option<Connecting>) -> Option<Socket> {
    match connecting.as_mut() {
        Some(attempt) => attempt.await,
        None => std::future::pending().await,
    }
}

/// # Cancel safety
///
/// Cancel safe: a frame is taken only when returned.
async fn next_frame(
    ws: &mut Option<Socket>,
) -> Option<Result<Message, tokio_tungstenite::tungstenite::Error>> {
    match ws.as_mut() {
        Some(ws) => ws.next().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
        None => std::future::pending().await,
    }
}

/// The time on tokio's clock (paused in tests).
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}
