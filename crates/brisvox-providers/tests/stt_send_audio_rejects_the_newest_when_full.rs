//! `send_audio` never waits: when the session's audio ring is full it refuses
//! the newest frame with `SendError::Full`; what was queued reaches the provider
//! intact and in order with the finalize after it, which always finds room.

use brisvox_core::AudioFrame;
use brisvox_providers::stt::{
    STT_CONTROL_HEADROOM, STT_INPUT_BUFFER_SAMPLES, STT_INPUT_CAPACITY, SttInput,
};
use brisvox_providers::{SendError, SttSession};

fn numbered_frame(n: usize, len: usize, rate: u32) -> AudioFrame {
    let samples: Vec<i16> = (0..len).map(|k| (n * 7 + k) as i16).collect();
    AudioFrame::from_samples(&samples, rate).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_full_ring_refuses_the_newest_and_keeps_the_rest_in_order() {
    // The ring limits 20 ms at 16 and 48 kHz; the queue limits 10 ms at 8 kHz.
    for (len, rate) in [(320, 16_000), (80, 8_000), (1920, 48_000)] {
        let (session, mut backend) = SttSession::channel();
        let fits = (STT_INPUT_BUFFER_SAMPLES / len).min(STT_INPUT_CAPACITY - STT_CONTROL_HEADROOM);
        for n in 0..fits {
            session.send_audio(&numbered_frame(n, len, rate)).unwrap();
        }
        assert_eq!(
            session.send_audio(&numbered_frame(fits, len, rate)),
            Err(SendError::Full)
        );
        session.finalize().await.unwrap();
        for n in 0..fits {
            match backend.recv().await {
                Some(SttInput::Audio(frame)) => assert_eq!(frame, numbered_frame(n, len, rate)),
                other => panic!("frame {n} of {len}: {other:?}"),
            }
        }
        assert!(matches!(backend.recv().await, Some(SttInput::Finalize)));
        // Drained: there is room again.
        session.send_audio(&numbered_frame(0, len, rate)).unwrap();
        drop(backend);
        assert_eq!(
            session.send_audio(&numbered_frame(1, len, rate)),
            Err(SendError::Closed)
        );
        assert_eq!(session.finalize().await, Err(SendError::Closed));
    }
}
