//! Cost of one timeline mark: a turn rotation every 13 events, no log subscriber.

use std::hint::black_box;
use std::time::{Duration, Instant};

use brisvox_core::Epoch;
use brisvox_core::timeline::{TimelineRecorder, TurnEvent};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const EVENTS_PER_TURN: u64 = 13;

fn marks(c: &mut Criterion) {
    #[allow(clippy::disallowed_methods)] // one real instant as the origin of the synthetic times
    let base = Instant::now();
    let mut group = c.benchmark_group("timeline");
    group.throughput(Throughput::Elements(EVENTS_PER_TURN));
    group.bench_function("turn_of_13_marks", |b| {
        let mut rec = TimelineRecorder::new();
        let mut epoch = 0u64;
        b.iter(|| {
            epoch += 1;
            for (i, ev) in TurnEvent::ALL
                .iter()
                .take(EVENTS_PER_TURN as usize)
                .enumerate()
            {
                let at = base + Duration::from_micros(epoch * 1000 + i as u64);
                black_box(rec.mark(Epoch(epoch), *ev, at));
            }
            if epoch.is_multiple_of(32) {
                black_box(rec.drain_finished().count());
            }
        });
    });
    group.finish();
}

criterion_group!(benches, marks);
criterion_main!(benches);
