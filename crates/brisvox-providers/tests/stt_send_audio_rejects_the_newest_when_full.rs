//! `send_audio` never waits: when the session's queued audio is full it refuses
//! the newest frame with `SendError::Full`; what was queued reaches the provider
//! intact and in order with the finalize after it, which always finds room.
//! Audio that is not a frame (too long, or at 0 Hz) is refused, not queued.

use brisvox_core::AudioFrame;
use brisvox_providers::stt::{
    STT_CONTROL_HEADROOM, STT_INPUT_BUFFER_SAMPLES, STT_INPUT_CAPACITY, SttAudio, SttInput,
};
use brisvox_providers::{SendError, SttSession};

fn numbered_frame(n: usize, len: usize, rate: u32) -> AudioFrame {
    let samples: Vec<i16> = (0..len).map(|k| (n * 7 + k) as i16).collect();
    AudioFrame::from_samples(&samples, rate).unwrap()
}

/// The provider got `expected`'s samples at its rate.
#[track_caller]
fn assert_same(got: &SttAudio, expected: &AudioFrame) {
    assert_eq!(got.samples(), expected.samples());
    assert_eq!(got.sample_rate_hz(), expected.sample_rate_hz());
    assert_eq!(got.duration(), expected.duration());
}

#[tokio::test(start_paused = true)]
async fn full_audio_refuses_the_newest_and_keeps_the_rest_in_order() {
    // Queued audio limits 20 ms at 16 and 48 kHz; the queue limits 10 ms at 8 kHz.
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
                Some(SttInput::Audio(frame)) => assert_same(&frame, &numbered_frame(n, len, rate)),
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

#[tokio::test(start_paused = true)]
async fn samples_go_in_as_a_frame_and_what_is_not_a_frame_is_refused() {
    let (session, mut backend) = SttSession::channel();
    let caller = numbered_frame(3, 320, 16_000);
    session
        .sender()
        .send_samples(caller.samples(), 16_000)
        .unwrap();
    let too_long = [1i16; brisvox_core::frame::MAX_FRAME_SAMPLES + 1];
    assert_eq!(
        session.sender().send_samples(&too_long, 48_000),
        Err(SendError::NotAFrame {
            samples: too_long.len(),
            sample_rate_hz: 48_000
        })
    );
    assert_eq!(
        session.sender().send_samples(&[1; 320], 0),
        Err(SendError::NotAFrame {
            samples: 320,
            sample_rate_hz: 0
        })
    );
    // Nothing of the refused audio was queued: the next frame is whole.
    session.send_audio(&numbered_frame(4, 320, 16_000)).unwrap();
    for n in [3, 4] {
        match backend.recv().await {
            Some(SttInput::Audio(frame)) => assert_same(&frame, &numbered_frame(n, 320, 16_000)),
            other => panic!("frame {n}: {other:?}"),
        }
    }
}
