//! How one fuzz input becomes a sequence of messages: the stateful decoders
//! (a websocket route, an SSE stream) are fed several messages in order.
//!
//! Each message is a tag byte (bit 0: 0 text, 1 binary), a length (`u32`
//! little endian) and that many bytes; a length past the end takes what is
//! left, and an input shorter than a header is one message of its own bytes.
//! Text that is not UTF-8 is made so (lossily): a websocket text frame always
//! is, and the server's socket rejects the others before any decoder.

use std::borrow::Cow;

/// One message of a fuzz input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    /// A text message.
    Text(Cow<'a, str>),
    /// A binary message (or a chunk of a byte stream).
    Binary(&'a [u8]),
}

impl Message<'_> {
    /// The message's bytes, whatever its kind.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Self::Text(t) => t.as_bytes(),
            Self::Binary(b) => b,
        }
    }
}

const HEADER_BYTES: usize = 5;

/// The messages of `data`, in order.
pub fn messages(data: &[u8]) -> impl Iterator<Item = Message<'_>> {
    let mut rest = data;
    let mut first = true;
    std::iter::from_fn(move || {
        if rest.len() < HEADER_BYTES {
            let whole = first && !rest.is_empty();
            first = false;
            let msg = whole.then_some(Message::Binary(rest));
            rest = &[];
            return msg;
        }
        first = false;
        let tag = rest[0];
        let len = u32::from_le_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        let body_len = len.min(rest.len() - HEADER_BYTES);
        let body = &rest[HEADER_BYTES..HEADER_BYTES + body_len];
        rest = &rest[HEADER_BYTES + body_len..];
        Some(if tag & 1 == 0 {
            Message::Text(String::from_utf8_lossy(body))
        } else {
            Message::Binary(body)
        })
    })
}

/// Encodes messages in the format [`messages`] reads (for seeds and tests).
pub fn encode<'a>(msgs: impl IntoIterator<Item = Message<'a>>) -> Vec<u8> {
    let mut out = Vec::new();
    for m in msgs {
        let (tag, bytes) = match &m {
            Message::Text(t) => (0u8, t.as_bytes()),
            Message::Binary(b) => (1u8, *b),
        };
        out.push(tag);
        // Seeds are small: a message over 4 GiB is not a seed.
        let len = u32::try_from(bytes.len()).expect("a seed message under 4 GiB");
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// A text message (for seeds).
pub fn text(s: &str) -> Message<'_> {
    Message::Text(Cow::Borrowed(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_messages_come_back_in_order() {
        let msgs = vec![text("{\"a\":1}"), Message::Binary(&[0, 1, 2]), text("")];
        let data = encode(msgs.clone());
        assert_eq!(messages(&data).collect::<Vec<_>>(), msgs);
    }

    #[test]
    fn short_and_truncated_inputs_still_give_messages() {
        assert_eq!(messages(&[]).count(), 0);
        assert_eq!(
            messages(b"ab").collect::<Vec<_>>(),
            [Message::Binary(b"ab")]
        );
        // Length 100 with 2 bytes left: the 2 bytes.
        let data = [1, 100, 0, 0, 0, 7, 8];
        assert_eq!(
            messages(&data).collect::<Vec<_>>(),
            [Message::Binary(&[7, 8])]
        );
        // Invalid UTF-8 text becomes replacement characters.
        let data = [0, 1, 0, 0, 0, 0xff];
        assert_eq!(
            messages(&data).collect::<Vec<_>>(),
            [Message::Text("\u{fffd}".into())]
        );
    }
}
