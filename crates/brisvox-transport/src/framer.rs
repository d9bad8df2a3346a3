//! [`FrameAssembler`]: binary audio of any size in, whole 20 ms frames out.
//!
//! A client may send audio in messages of any length: 10 ms, 20 ms, 100 ms, an
//! odd number of PCM16 bytes split across two messages. The assembler keeps the
//! bytes that do not yet make a whole frame and hands out whole frames only.
//! Driving: [`FrameAssembler::push`] a message's bytes, then call
//! [`FrameAssembler::pop_frame`] until it returns `None`.
//!
//! It is bounded: at most `max_pending_bytes` may wait. A push that would go
//! past the bound is refused whole (reject newest) with
//! [`FramerError::Backlog`]; a reader that pops every frame after each push
//! never sees it, since one message is bounded by the decoder's size limit.

use crate::FRAME_MS;

/// Why a push was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FramerError {
    /// The bytes waiting plus the pushed bytes would exceed the bound.
    #[error(
        "audio backlog: {pending_bytes} bytes waiting + {pushed_bytes} pushed > limit {limit_bytes}"
    )]
    Backlog {
        /// Bytes already waiting (less than one frame after a full drain).
        pending_bytes: usize,
        /// Bytes of the refused push.
        pushed_bytes: usize,
        /// The bound, `max_pending_bytes`.
        limit_bytes: usize,
    },
}

/// Reassembles a byte stream into fixed-size frames. See the module docs.
#[derive(Debug, Clone)]
pub struct FrameAssembler {
    frame_bytes: usize,
    max_pending_bytes: usize,
    buf: Vec<u8>,
    /// Start of the bytes not yet handed out.
    read: usize,
}

impl FrameAssembler {
    /// An assembler for frames of `frame_bytes` bytes that holds at most
    /// `max_pending_bytes` (raised to at least one frame).
    ///
    /// # Panics
    /// If `frame_bytes` is zero (a bug in the caller: no codec has empty frames).
    pub fn new(frame_bytes: usize, max_pending_bytes: usize) -> Self {
        assert!(frame_bytes > 0, "a frame must hold at least one byte");
        let max_pending_bytes = max_pending_bytes.max(frame_bytes);
        Self {
            frame_bytes,
            max_pending_bytes,
            buf: Vec::with_capacity(max_pending_bytes),
            read: 0,
        }
    }

    /// Bytes in one 20 ms frame for audio with `bytes_per_sample` at `rate_hz`.
    pub fn frame_bytes_for(bytes_per_sample: usize, rate_hz: u32) -> usize {
        (rate_hz as usize * FRAME_MS as usize / 1000) * bytes_per_sample
    }

    /// Bytes in one frame.
    pub fn frame_bytes(&self) -> usize {
        self.frame_bytes
    }

    /// Bytes waiting (not yet handed out as frames).
    pub fn pending_bytes(&self) -> usize {
        self.buf.len() - self.read
    }

    /// The bound on waiting bytes.
    pub fn max_pending_bytes(&self) -> usize {
        self.max_pending_bytes
    }

    /// Appends `bytes`; refused whole when the bound would be passed.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), FramerError> {
        let pending = self.pending_bytes();
        if pending + bytes.len() > self.max_pending_bytes {
            return Err(FramerError::Backlog {
                pending_bytes: pending,
                pushed_bytes: bytes.len(),
                limit_bytes: self.max_pending_bytes,
            });
        }
        if self.read > 0 {
            self.buf.drain(..self.read);
            self.read = 0;
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// The next whole frame, or `None` when less than a frame waits.
    pub fn pop_frame(&mut self) -> Option<&[u8]> {
        if self.pending_bytes() < self.frame_bytes {
            return None;
        }
        let start = self.read;
        self.read += self.frame_bytes;
        Some(&self.buf[start..self.read])
    }

    /// Whole frames waiting.
    pub fn frames_ready(&self) -> usize {
        self.pending_bytes() / self.frame_bytes
    }

    /// Forgets every waiting byte (the call ended or restarted).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.read = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_sizes_follow_rate_and_codec() {
        assert_eq!(FrameAssembler::frame_bytes_for(1, 8000), 160);
        assert_eq!(FrameAssembler::frame_bytes_for(2, 16000), 640);
        assert_eq!(FrameAssembler::frame_bytes_for(2, 24000), 960);
        assert_eq!(FrameAssembler::frame_bytes_for(2, 48000), 1920);
    }

    #[test]
    fn odd_splits_reassemble_in_order() {
        let data: Vec<u8> = (0..=255u8).cycle().take(640 * 3).collect();
        let mut asm = FrameAssembler::new(640, 4096);
        let mut out = Vec::new();
        for chunk in data.chunks(333) {
            asm.push(chunk).unwrap();
            while let Some(f) = asm.pop_frame() {
                assert_eq!(f.len(), 640);
                out.extend_from_slice(f);
            }
        }
        assert_eq!(out, data);
        assert_eq!(asm.pending_bytes(), 0);
    }

    #[test]
    fn push_past_the_bound_is_refused_whole() {
        let mut asm = FrameAssembler::new(160, 320);
        asm.push(&[0; 300]).unwrap();
        let err = asm.push(&[0; 30]).unwrap_err();
        assert_eq!(
            err,
            FramerError::Backlog {
                pending_bytes: 300,
                pushed_bytes: 30,
                limit_bytes: 320
            }
        );
        assert_eq!(asm.pending_bytes(), 300);
        assert!(asm.pop_frame().is_some());
        asm.push(&[0; 30]).unwrap();
        assert_eq!(asm.pending_bytes(), 170);
    }
}
