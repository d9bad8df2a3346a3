"""The example agents (examples/agents) against the real `brisvox` binary,
over real sockets: the binary opens the agent link to the example agent, a
caller on /call speaks (a tone for the energy VAD; the mock STT hears "mock
transcript N"), the scripted mock LLM calls the agent's tools, and the bot's
answers (the `bot.text` events the agent receives) carry the tools' results.
The booking flow ends the call itself.

Needs the binary (target/debug/brisvox, built by `cargo test`, or
BRISVOX_BIN): skipped with a reason when it is missing, failed when CI is set.
"""

import asyncio
import importlib.util
import json
import math
import os
import pathlib
import re
import struct
import sys

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from conftest import ROOT, run

BINARY = pathlib.Path(os.environ.get("BRISVOX_BIN", ROOT / "target" / "debug" / "brisvox"))
EXAMPLES = ROOT / "examples" / "agents"

if not BINARY.exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"{BINARY} is missing: build it first (cargo build -p brisvox-server)")
    pytest.skip(f"{BINARY} is missing (cargo build -p brisvox-server)", allow_module_level=True)


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def agent_file(name: str, port: int, path: pathlib.Path) -> pathlib.Path:
    """The example's agent file, pointed at `port`, with no greeting and quick mocks."""
    text = (EXAMPLES / f"{name.removesuffix('_agent')}.toml").read_text()
    text = text.replace("ws://127.0.0.1:9000", f"ws://127.0.0.1:{port}")
    text = re.sub(r'(?m)^greeting = .*$', 'greeting = ""', text)
    text = text.replace("first_token_ms = 200", "first_token_ms = 20\ntoken_interval_ms = 5")
    out = path / f"{name}.toml"
    out.write_text(text)
    return out


async def start_binary(agent_toml: pathlib.Path):
    proc = await asyncio.create_subprocess_exec(
        str(BINARY), "serve", "--bind", "127.0.0.1:0", "--log-format", "json",
        "--agent", str(agent_toml),
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "RUST_LOG": "info"},
    )
    while True:
        line = await proc.stderr.readline()
        assert line, "the binary exited before listening"
        fields = json.loads(line).get("fields", {})
        if fields.get("message") == "listening":
            addr = fields["local_addr"]
            break

    async def drain():
        while await proc.stderr.readline():
            pass

    return proc, addr, asyncio.create_task(drain())


def frame(n: int, loud: bool) -> bytes:
    """20 ms of 16 kHz PCM16: a 300 Hz tone (speech to the energy VAD) or silence."""
    samples = (
        int(8000 * math.sin(2 * math.pi * 300 * (n * 320 + i) / 16000)) if loud else 0
        for i in range(320)
    )
    return struct.pack("<320h", *samples)


class Caller:
    """A /call client that sends audio in real time and speaks on request."""

    def __init__(self, ws):
        self.ws, self.n, self.loud_until = ws, 0, 0
        self.task = asyncio.create_task(self._run())

    def speak(self):
        self.loud_until = self.n + 30  # 600 ms

    async def _run(self):
        async def read():
            async for _ in self.ws:
                pass

        reader = asyncio.create_task(read())
        try:
            start = asyncio.get_running_loop().time()
            while True:
                try:
                    await self.ws.send(frame(self.n, self.n < self.loud_until))
                except ConnectionClosed:
                    return
                self.n += 1
                await asyncio.sleep(max(0.0, start + self.n * 0.02 - asyncio.get_running_loop().time()))
        finally:
            reader.cancel()


async def call_example(name: str, tmp_path, turns: list[str], until_ended: bool):
    """Runs one call against the example agent `name`; returns what the agent saw."""
    example = load(name)
    seen: list = []
    changed = asyncio.Event()

    @example.agent.on("*")
    async def record(ctx, event):
        seen.append(event)
        changed.set()

    async def wait_for(pred, what, after=0):
        """The index of the first event from `after` on for which `pred` holds."""
        while True:
            found = next((i for i in range(after, len(seen)) if pred(seen[i])), None)
            if found is not None:
                return found
            changed.clear()
            try:
                await asyncio.wait_for(changed.wait(), 10)
            except asyncio.TimeoutError:
                raise AssertionError(f"never saw {what}; saw {[e.TYPE for e in seen]}") from None

    server = await example.agent.serve("127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proc, addr, drain = await start_binary(agent_file(name, port, tmp_path))
    try:
        async with connect(f"ws://{addr}/call") as ws:
            await ws.send(json.dumps({"type": "start", "protocol_version": 1, "codec": "pcm16",
                                      "sample_rate": 16000, "call_id": f"py-{name}"}))
            assert json.loads(await ws.recv())["type"] == "started"
            caller = Caller(ws)
            for part in turns:
                caller.speak()
                said = await wait_for(
                    lambda e: e.TYPE == "bot.text" and part in e.text, f"bot.text with {part!r}"
                )
                # The next turn starts once the answer has played out.
                await wait_for(lambda e: e.TYPE in ("bot.stopped_speaking", "call.ended"),
                               "the answer's end", said)
            if until_ended:
                await wait_for(lambda e: e.TYPE == "call.ended", "call.ended")
            caller.task.cancel()
    finally:
        proc.kill()
        await proc.wait()
        drain.cancel()
        server.close()
    return example, seen


def test_the_lookup_agent_answers_from_its_two_tools(tmp_path):
    example, seen = run(call_example("lookup_agent", tmp_path, ['"shipped"', "10 to 14"], False), 40)
    started = seen[0]
    assert (started.TYPE, started.route, started.call_id) == ("call.started", "call", "py-lookup_agent")
    calls = [(e.name, e.arguments) for e in seen if e.TYPE == "tool.call"]
    assert calls == [("order_status", {"order_id": "42"}), ("opening_hours", {"day": "saturday"})]


def test_the_booking_flow_books_and_ends_the_call(tmp_path):
    example, seen = run(
        call_example("booking_agent", tmp_path, ["under Ada", "on Friday", "Goodbye!"], True), 40
    )
    assert example.BOOKINGS == [("Ada", "Friday")]
    ended = [e for e in seen if e.TYPE == "call.ended"]
    assert ended[0].reason == "agent"
    said = " ".join(e.text for e in seen if e.TYPE == "bot.text")
    assert "You're booked, Ada, for Friday. Goodbye!" in said
