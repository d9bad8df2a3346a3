"""Shared test helpers: the repo's protocol files and a fake brisvox server
(a websocket client speaking the server's side of the link)."""

import asyncio
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "sdk" / "python"))

SCHEMA_PATH = ROOT / "docs" / "agent-protocol.schema.json"
DOC_PATH = ROOT / "docs" / "AGENT_PROTOCOL.md"


def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def doc_examples() -> list[dict]:
    blocks = re.findall(r"```json\n(.*?)```", DOC_PATH.read_text(), re.S)
    return [json.loads(b) for b in blocks]


def run(coro, timeout: float = 10.0):
    """Runs a coroutine with a deadline (a hung test fails instead of hanging)."""
    return asyncio.run(asyncio.wait_for(coro, timeout))
