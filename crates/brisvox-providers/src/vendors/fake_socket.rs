//! A scripted websocket for the session tasks' unit tests: sends succeed a
//! set number of times and then fail as a socket the peer closed would;
//! reads give the scripted messages and then nothing (pending, never an
//! end), so a test decides exactly what the task can read and when a send
//! fails, with no network and no timing.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_util::{Sink, Stream};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message as WsMessage};

/// A close frame with `code` and `reason`, as a vendor sends it.
pub(crate) fn close(code: u16, reason: &str) -> WsMessage {
    WsMessage::Close(Some(CloseFrame {
        code: code.into(),
        reason: reason.into(),
    }))
}

/// See the module documentation.
pub(crate) struct FakeSocket {
    ok_sends: usize,
    sent: Arc<Mutex<Vec<WsMessage>>>,
    incoming: VecDeque<WsMessage>,
}

impl FakeSocket {
    /// A socket whose first `ok_sends` sends succeed and whose reads give
    /// `incoming`; the handle shows what was sent.
    pub(crate) fn new(
        ok_sends: usize,
        incoming: Vec<WsMessage>,
    ) -> (FakeSocket, Arc<Mutex<Vec<WsMessage>>>) {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let socket = FakeSocket {
            ok_sends,
            sent: Arc::clone(&sent),
            incoming: incoming.into(),
        };
        (socket, sent)
    }
}

impl Sink<WsMessage> for FakeSocket {
    type Error = WsError;

    fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), WsError>> {
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, item: WsMessage) -> Result<(), WsError> {
        let mut sent = self.sent.lock().expect("fake socket lock");
        if sent.len() >= self.ok_sends {
            return Err(WsError::Io(io::ErrorKind::BrokenPipe.into()));
        }
        sent.push(item);
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), WsError>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), WsError>> {
        Poll::Ready(Ok(()))
    }
}

impl Stream for FakeSocket {
    type Item = Result<WsMessage, WsError>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.incoming.pop_front() {
            Some(message) => Poll::Ready(Some(Ok(message))),
            // Never woken: the task under test wakes on its other sources.
            None => Poll::Pending,
        }
    }
}
