"""The SDK's agent server over real sockets, driven by a test client that
plays the brisvox server's side of the link (events out, commands back)."""

import asyncio
import json
from typing import Literal, Optional

import jsonschema
from websockets.asyncio.client import connect

from brisvox import Agent, CallContext, ToolError, UserTranscript
from conftest import run, schema

COMMANDS = jsonschema.Draft202012Validator({"$ref": "#/$defs/agent_to_server", "$defs": schema()["$defs"]})


def started(call_id="c-1", resumed=False, id=1):
    return {"type": "call.started", "id": id, "protocol": 1, "call_id": call_id, "route": "call",
            "caller": None, "metadata": {"customer": "7"}, "resumed": resumed}


def make_agent() -> Agent:
    agent = Agent()
    both_started = asyncio.Event()
    arrived: list[str] = []

    @agent.tool
    async def order_status(ctx: CallContext, order_id: str, verbose: bool = False) -> dict:
        """Status of an order.

        Args:
            order_id: The order number.
        """
        if order_id != "42":
            raise ToolError(f"no order {order_id}")
        return {"status": "shipped", "customer": ctx.metadata["customer"]}

    @agent.tool(name="wait_for_other")
    async def wait_a(ctx: CallContext, who: Literal["a", "b"], note: Optional[str] = None) -> str:
        """Finishes only once both calls of the round have started (parallel calls)."""
        arrived.append(who)
        if len(arrived) == 2:
            both_started.set()
        await both_started.wait()
        return who

    @agent.on("user.transcript")
    async def goodbye(ctx: CallContext, event: UserTranscript):
        if event.final and "goodbye" in event.text:
            await ctx.end_call(say="Goodbye!", reason="caller said goodbye")

    return agent


async def with_agent(test):
    agent = make_agent()
    server = await agent.serve("127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with connect(f"ws://127.0.0.1:{port}") as ws:
            await test(agent, ws)
    finally:
        server.close()
        await server.wait_closed()


async def recv(ws) -> dict:
    command = json.loads(await ws.recv())
    errors = [e.message for e in COMMANDS.iter_errors(command)]
    assert not errors, (command, errors)
    return command


def test_tools_are_announced_with_schemas_from_their_signatures():
    async def test(agent, ws):
        await ws.send(json.dumps(started()))
        tools_set = await recv(ws)
        assert tools_set["type"] == "tools.set" and tools_set["re"] == 1
        by_name = {t["name"]: t for t in tools_set["tools"]}
        assert by_name["order_status"] == {
            "name": "order_status",
            "description": "Status of an order.",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string", "description": "The order number."},
                    "verbose": {"type": "boolean"},
                },
                "required": ["order_id"],
                "additionalProperties": False,
            },
        }
        params = by_name["wait_for_other"]["parameters"]
        assert params["properties"]["who"] == {"enum": ["a", "b"]}
        assert params["required"] == ["who"]

    run(with_agent(test))


def test_tool_calls_get_results_and_errors_naming_their_event():
    async def test(agent, ws):
        await ws.send(json.dumps(started()))
        await recv(ws)
        for id, name, args in [
            (2, "order_status", {"order_id": "42"}),
            (3, "order_status", {"order_id": "9"}),
            (4, "no_such_tool", {}),
            (5, "order_status", {"wrong": 1}),
            (6, "order_status", "{not json"),
        ]:
            await ws.send(json.dumps({"type": "tool.call", "id": id, "turn": 1, "call_id": f"c{id}",
                                      "name": name, "arguments": args}))
            got = await recv(ws)
            assert got["type"] == "tool.result" and got["re"] == id
            if id == 2:
                assert got["result"] == {"status": "shipped", "customer": "7"}
            else:
                assert "error" in got and "result" not in got, got
        assert got["error"] == "arguments of order_status must be a JSON object"

    run(with_agent(test))


def test_the_calls_of_one_round_run_at_the_same_time():
    async def test(agent, ws):
        await ws.send(json.dumps(started()))
        await recv(ws)
        for id, who in [(2, "a"), (3, "b")]:
            await ws.send(json.dumps({"type": "tool.call", "id": id, "turn": 1, "call_id": who,
                                      "name": "wait_for_other", "arguments": {"who": who}}))
        results = {(await recv(ws))["re"] for _ in range(2)}
        assert results == {2, 3}

    run(with_agent(test))


def test_a_handler_command_names_the_event_and_the_call_keeps_state_across_a_reconnect():
    async def test(agent, ws):
        await ws.send(json.dumps(started()))
        await recv(ws)
        agent.calls["c-1"].state["seen"] = True
        await ws.send(json.dumps({"type": "user.transcript", "id": 2, "text": "ok goodbye", "final": True}))
        end = await recv(ws)
        assert end == {"type": "call.end", "re": 2, "say": "Goodbye!", "reason": "caller said goodbye"}
        assert agent.calls["c-1"].transcripts == ["ok goodbye"]
        port = ws.remote_address[1]
        async with connect(f"ws://127.0.0.1:{port}") as again:
            await again.send(json.dumps(started(resumed=True, id=3)))
            assert (await recv(again))["re"] == 3
            assert agent.calls["c-1"].state == {"seen": True}

    run(with_agent(test))
