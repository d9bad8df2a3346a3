#!/usr/bin/env python3
"""Splits a server profile into CPU categories (bench/framework-profile.sh).

Usage: bench/perf_split.py PERF_SCRIPT_TXT
  PERF_SCRIPT_TXT: `perf script -F comm,tid,period,ip,sym --inline` of a `perf record -g`.

Each sample goes to one category:
- kernel samples by the system call on their stack (socket send or receive, epoll,
  futex, ...) or page faults; what has none is "kernel: other" (interrupts,
  softirq, scheduler);
- user samples by the leaf-most frame that matches a rule below, inlined frames
  included; memcpy/memset and core/alloc helpers are skipped, so a copy lands on the
  code that asked for it (e.g. the websocket read buffer's zero-fill).
Prints a markdown table: category, samples, share.
"""
import collections
import re
import sys

KERNEL = [
    (r"__x64_sys_(sendto|sendmsg|write|writev)\b", "kernel: socket send (TCP on loopback)"),
    (r"__x64_sys_(recvfrom|recvmsg|read|readv)\b", "kernel: socket receive (TCP on loopback, ACKs)"),
    (r"__x64_sys_epoll", "kernel: epoll (tokio's I/O driver)"),
    (r"__x64_sys_futex", "kernel: futex (worker threads park / unpark)"),
    (r"__x64_sys_(accept4?|socket|close|shutdown|setsockopt|getsockname|getpeername)\b",
     "kernel: connection set-up and teardown"),
    (r"__x64_sys_(mmap|munmap|madvise|brk|mprotect|mremap)\b", "kernel: memory mapping"),
    (r"exc_page_fault", "kernel: page faults"),
    (r"__x64_sys_", "kernel: other system calls"),
]

USER = [
    (r"bytes::bytes_mut::BytesMut::resize",
     "websocket: read buffer zero-fill before each read (tungstenite)"),
    (r"tungstenite|axum::extract::ws|futures_util::lock::bilock|SplitSink|SplitStream",
     "websocket framing (tungstenite, split halves)"),
    (r"hyper::|tower::|httparse|brisvox_server::listener", "HTTP and upgrade (call set-up)"),
    (r"brisvox_providers::mock::tts|__sin|\bsin\b", "mock TTS (tone synthesis, in the server)"),
    (r"brisvox_providers::mock::stt", "mock STT (in the server)"),
    (r"brisvox_providers::mock::llm", "mock LLM (in the server)"),
    (r"brisvox_providers::mock", "mock providers, other (in the server)"),
    (r"brisvox_providers::", "provider sessions (STT/TTS/LLM channels)"),
    (r"rubato|realfft|rustfft|brisvox_audio::resample|OutputFramer", "resampling"),
    (r"decode_to|encode_to|brisvox_audio::g711|brisvox_audio::pcm", "codecs (PCM16, G.711)"),
    (r"serde_json|serde::|to_json|brisvox_ws::(events|decode)", "JSON events and control parsing"),
    (r"tracing_subscriber|tracing_core|tracing::|sharded_slab|Instrumented",
     "tracing (spans entered at each poll) and logging"),
    (r"prometheus|brisvox_server::(metrics|model_metrics)", "metrics"),
    (r"brisvox_server::(call_log|wire_events)", "call log, wire events"),
    (r"^(malloc|free|cfree|_int_malloc|_int_free\w*|_int_realloc|realloc|calloc|unlink_chunk|"
     r"malloc_consolidate|__libc_malloc|__libc_free|__GI___libc_\w+|__rust_alloc|__rust_dealloc|"
     r"__rust_realloc)", "allocation (malloc, free)"),
    (r"tokio::time|tokio::runtime::time", "tokio timers"),
    (r"tokio::sync|tokio::runtime::task::waker|AtomicWaker|tokio::runtime::task::state|"
     r"drop_waker|futures_core::task", "tokio sync and wake-ups (channels, notify, watch, wakers)"),
    (r"tokio::runtime::io|mio::|tokio::net|tokio::io", "tokio I/O driver and socket polls"),
    (r"tokio::runtime|tokio::task", "tokio scheduler (task polls, run queues)"),
    (r"brisvox_engine::stages::audio_in", "engine: AudioIn (VAD energy, frame hand-offs)"),
    (r"brisvox_engine::stages::output|brisvox_audio::pacer|PlayoutBook", "engine: output pacer"),
    (r"brisvox_engine::stages::tts", "engine: TTS stage"),
    (r"brisvox_engine::stages::driver|brisvox_engine::turn", "engine: turn driver"),
    (r"brisvox_engine::stages::(llm|segmenter|spoken|speculative|early)|brisvox_text",
     "engine: LLM, segmenter"),
    (r"brisvox_engine::stages::stt", "engine: STT stage"),
    (r"brisvox_engine::(edge|frame_queue)|brisvox_core::frame",
     "engine: the call edge's queues (frames in and out)"),
    (r"brisvox_engine|brisvox_core", "engine: other"),
    (r"brisvox_server::(route|ws_call|audio_edge|engine|handler|gate|admission|shedding|forecast)",
     "server: the /call route (reader, writer, set-up)"),
    (r"brisvox_server", "server: other"),
    (r"brisvox_transport", "transport codecs"),
    (r"clock_gettime|Instant::now", "clock reads"),
]

SKIP = re.compile(r"^(__mem(move|cpy|set)\w*|mem(cpy|move|set)|<?core::|<?alloc::(vec|raw_vec|slice|str)|"
                  r"\[unknown\]|0x)")
KR = [(re.compile(p), c) for p, c in KERNEL]
UR = [(re.compile(p), c) for p, c in USER]
ALLOC = "allocation (malloc, free)"


def classify(frames):
    """frames: (is_kernel, symbol), leaf first."""
    if frames and frames[0][0]:
        for kernel, sym in frames:
            if not kernel:
                break
            for rule, cat in KR:
                if rule.search(sym):
                    return cat
        return "kernel: other (interrupts, softirq, scheduler)"
    for kernel, sym in frames:
        if kernel:
            continue
        skipped = SKIP.match(sym) is not None
        for rule, cat in UR:
            if rule.search(sym):
                if skipped and cat != ALLOC:
                    break
                return cat
    return "other / unresolved"


def samples(path):
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                if cur is not None:
                    yield cur
                cur = None
                continue
            if not line.startswith((" ", "\t")):
                cur = []
                continue
            parts = line.strip().split(None, 1)
            if len(parts) < 2 or cur is None:
                continue
            ip, sym = parts
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            sym = re.sub(r" \((inlined|[^()]*\.so[^()]*)\)$", "", sym)
            cur.append((ip.startswith("ffffffff"), sym))
    if cur is not None:
        yield cur


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    counts = collections.Counter()
    for frames in samples(sys.argv[1]):
        counts[classify(frames)] += 1
    n = sum(counts.values())
    if n == 0:
        sys.exit("perf_split: no samples")
    print("| category | samples | share |")
    print("|---|---|---|")
    for cat, v in counts.most_common():
        print(f"| {cat} | {v} | {100 * v / n:.1f} % |")
    print(f"| total | {n} | 100 % |")


if __name__ == "__main__":
    main()
