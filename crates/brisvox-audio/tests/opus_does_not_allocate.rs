//! The Opus encoder and decoder do not allocate per frame: a counting global
//! allocator (the test kit's, per thread) watches them in steady state,
//! including concealment and FEC recovery of lost packets.

use brisvox_audio::opus::{OpusDecoder, OpusEncoder, OpusEncoderConfig};
use brisvox_testkit::alloc::{CountingAllocator, thread_allocations as allocations};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn opus_encode_decode_and_concealment_do_not_allocate() {
    let frame: Vec<i16> = (0..960).map(|i| ((i * 37 % 4000) as i16) - 2000).collect();
    let mut enc = OpusEncoder::new(OpusEncoderConfig::default()).unwrap();
    let mut dec = OpusDecoder::new(48_000).unwrap();
    let mut last = [0u8; 4000];
    let mut decoded = 0;
    let before = allocations();
    for i in 0..100 {
        let packet = enc.encode(&frame).unwrap();
        let len = packet.len();
        last[..len].copy_from_slice(packet);
        decoded += match i % 10 {
            3 => dec.conceal().unwrap().len(),
            7 => dec.recover(&last[..len]).unwrap().len(),
            _ => dec.decode(&last[..len]).unwrap().len(),
        };
    }
    assert_eq!(allocations() - before, 0, "the media path allocated");
    assert_eq!(decoded, 100 * 960);
}
