#!/usr/bin/env python3
"""How long the bot's audio stays quiet before a `say` is heard.

Connects to a running brisvox /call (PCM16, 16 kHz), asks it to `say` TEXT,
sends silence in real time for 8 s, and prints where the bot's audio first
reaches |x| >= 50 and |x| >= 500 (the threshold brisvox-bench v2v uses), in ms
from the first bot sample. Needs the Python package websockets.

Usage: bench/say_lead_in.py ws://127.0.0.1:PORT/call "You said: Please hold."
"""
import asyncio
import json
import struct
import sys
import time

import websockets


def first_at(samples, level):
    return next((i / 16 for i, x in enumerate(samples) if abs(x) >= level), None)


async def main(url, text):
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "start", "protocol_version": 1, "codec": "pcm16",
                                  "sample_rate": 16000, "call_id": "say-lead-in"}))
        await ws.recv()
        await ws.send(json.dumps({"type": "say", "text": text}))
        audio = bytearray()

        async def feed():
            while True:
                await ws.send(bytes(640))
                await asyncio.sleep(0.02)

        feeder = asyncio.create_task(feed())
        t0 = time.monotonic()
        try:
            while time.monotonic() - t0 < 8:
                try:
                    m = await asyncio.wait_for(ws.recv(), 1)
                except asyncio.TimeoutError:
                    continue
                if isinstance(m, bytes):
                    audio += m
        finally:
            feeder.cancel()
        s = struct.unpack("<%dh" % (len(audio) // 2), audio)
        print(f"{len(s)} samples; first |x| >= 50 at {first_at(s, 50)} ms; "
              f"first |x| >= 500 at {first_at(s, 500)} ms")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2]))
