"""The agent server: a websocket server the brisvox server connects to, one
connection per call.

    agent = Agent()

    @agent.tool
    async def opening_hours(ctx: CallContext, day: str) -> str:
        '''Opening hours of the shop on a day of the week.'''
        return HOURS.get(day.lower(), "closed")

    @agent.on("user.transcript")
    async def heard(ctx: CallContext, event: UserTranscript):
        if event.final and "goodbye" in event.text.lower():
            await ctx.end_call(say="Goodbye!")

    agent.run(port=9000)

- Tools declared with ``@agent.tool`` are announced (``tools.set``) as soon as
  a call starts; the model calls them, the SDK runs them (several at once
  when the model asks for several) and answers ``tool.result``. A tool that
  raises ToolError gives the model that message as an error; any other
  exception gives it "tool NAME failed" (and is logged).
- Handlers (``@agent.on(type)``, or ``"*"`` for every event) run in event
  order, one at a time per call; tools run beside them.
- Inside a handler or tool, every command sent names the event being handled
  (``re``), so the server measures the hop.
- A call's context survives a reconnect of its link (same ``call_id``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any, Awaitable, Callable, Optional, Union

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from . import protocol as p
from .tools import Tool, ToolError, tool_from_function

log = logging.getLogger("brisvox")

Handler = Callable[["CallContext", p.Event], Awaitable[None]]

_current_event: contextvars.ContextVar[Optional[int]] = contextvars.ContextVar(
    "brisvox_current_event", default=None
)


class CallContext:
    """One call, as the agent sees it: what it knows and what it can do."""

    def __init__(self, agent: "Agent", started: p.CallStarted):
        self.agent = agent
        self.call_id = started.call_id
        self.route = started.route
        self.caller = started.caller
        self.metadata = started.metadata
        #: Free for the agent's own per-call data (like LiveKit's userdata).
        self.state: dict[str, Any] = {}
        #: Final transcripts of the caller so far.
        self.transcripts: list[str] = []
        self.ended = False
        self._ws: Optional[ServerConnection] = None
        self._send_lock = asyncio.Lock()

    async def send(self, command: p.Command, re: Optional[int] = None) -> None:
        """Sends a command; ``re`` defaults to the event being handled."""
        if re is None:
            re = _current_event.get()
        ws = self._ws
        if ws is None:
            raise ConnectionError("the call's link is not connected")
        async with self._send_lock:
            await ws.send(command.to_json(re))

    async def say(self, text: str, interrupt: bool = False) -> None:
        """Speaks ``text`` (after what the bot is saying, or at once with ``interrupt``)."""
        await self.send(p.Say(text=text, interrupt=interrupt))

    async def update_context(
        self,
        system_prompt: Optional[str] = None,
        messages: Optional[list[Union[p.ContextMessage, dict]]] = None,
        mode: str = "append",
    ) -> None:
        """Changes the model's system prompt and/or conversation from its next completion on."""
        update = None
        if messages is not None:
            items = tuple(
                m if isinstance(m, p.ContextMessage) else p.ContextMessage(m["role"], m["content"])
                for m in messages
            )
            update = p.MessagesUpdate(mode=mode, items=items)  # type: ignore[arg-type]
        await self.send(p.ContextUpdate(system_prompt=system_prompt, messages=update))

    async def respond(self) -> None:
        """Asks the model to answer now over the context as it stands,
        without a caller turn (after the bot's current speech, or after the
        caller's turn when the caller is speaking: docs/AGENT_PROTOCOL.md)."""
        await self.send(p.Respond())

    async def end_call(self, say: Optional[str] = None, reason: Optional[str] = None) -> None:
        """Ends the call, after saying ``say`` if given."""
        await self.send(p.CallEnd(say=say, reason=reason))

    async def transfer(self, to: str, say: Optional[str] = None) -> None:
        """Hands a phone call over to ``to`` (a ``[telephony.transfer]``
        destination's name, an E.164 number or a ``sip:`` URI), after saying
        ``say`` if given; the call then ends."""
        await self.send(p.CallTransfer(to=to, say=say))

    async def set_tools(self, tools: list[Tool]) -> None:
        """Replaces the tools the model may call on this call."""
        await self.send(p.ToolsSet(tools=tuple(t.spec() for t in tools)))


class Agent:
    """Tools and event handlers, served to brisvox over the agent link."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.handlers: dict[str, list[Handler]] = {}
        self.calls: dict[str, CallContext] = {}

    def tool(
        self,
        fn: Optional[Callable[..., Awaitable[Any]]] = None,
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        parameters: Optional[dict] = None,
    ):
        """Declares a tool (decorator, with or without arguments)."""

        def register(f: Callable[..., Awaitable[Any]]):
            tool = tool_from_function(f, name, description, parameters)
            self.tools[tool.name] = tool
            return f

        return register(fn) if fn is not None else register

    def on(self, event_type: str):
        """Declares a handler of events of ``event_type`` (``"*"``: every event)."""
        if event_type != "*" and event_type not in p.EVENT_TYPES:
            raise ValueError(f"unknown event type {event_type!r}")

        def register(f: Handler) -> Handler:
            self.handlers.setdefault(event_type, []).append(f)
            return f

        return register

    async def serve(self, host: str = "127.0.0.1", port: int = 9000):
        """Starts serving; returns the websockets server (``async with`` it, or ``.close()``)."""
        return await serve(self._connection, host, port)

    def run(self, host: str = "127.0.0.1", port: int = 9000) -> None:
        """Serves until interrupted."""

        async def main() -> None:
            server = await self.serve(host, port)
            log.info("brisvox agent listening on ws://%s:%d", host, port)
            await server.serve_forever()

        asyncio.run(main())

    # The link ------------------------------------------------------------

    async def _connection(self, ws: ServerConnection) -> None:
        call: Optional[CallContext] = None
        queue: asyncio.Queue[Optional[p.Event]] = asyncio.Queue()
        worker: Optional[asyncio.Task] = None
        tasks: set[asyncio.Task] = set()
        try:
            async for frame in ws:
                try:
                    event = p.parse_event(frame)
                except p.ProtocolError as e:
                    log.warning("brisvox: ignored a frame: %s", e)
                    continue
                if isinstance(event, p.CallStarted):
                    call = self._attach(event, ws)
                    if worker is None:
                        worker = asyncio.create_task(self._handle_in_order(call, queue))
                    await self._announce_tools(call, event)
                if call is None:
                    continue
                if isinstance(event, p.ToolCall):
                    task = asyncio.create_task(self._run_tool(call, event))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                if isinstance(event, p.CallEnded):
                    call.ended = True
                    self.calls.pop(call.call_id, None)
                queue.put_nowait(event)
        except ConnectionClosed:
            pass
        finally:
            queue.put_nowait(None)
            if worker is not None:
                await worker
            for task in list(tasks):
                task.cancel()
            if call is not None and call._ws is ws:
                call._ws = None

    def _attach(self, started: p.CallStarted, ws: ServerConnection) -> CallContext:
        call = self.calls.get(started.call_id) if started.resumed else None
        if call is None:
            call = CallContext(self, started)
            self.calls[started.call_id] = call
        call._ws = ws
        return call

    async def _announce_tools(self, call: CallContext, event: p.CallStarted) -> None:
        if self.tools:
            token = _current_event.set(event.id)
            try:
                await call.set_tools(list(self.tools.values()))
            finally:
                _current_event.reset(token)

    async def _handle_in_order(self, call: CallContext, queue: asyncio.Queue) -> None:
        while (event := await queue.get()) is not None:
            if isinstance(event, p.UserTranscript) and event.final:
                call.transcripts.append(event.text)
            for handler in self.handlers.get(event.TYPE, []) + self.handlers.get("*", []):
                token = _current_event.set(event.id)
                try:
                    await handler(call, event)
                except ConnectionClosed:
                    return
                except Exception:  # a handler's bug must not end the call's link
                    log.exception("brisvox: handler %s failed on %s", handler.__name__, event.TYPE)
                finally:
                    _current_event.reset(token)

    async def _run_tool(self, call: CallContext, event: p.ToolCall) -> None:
        token = _current_event.set(event.id)
        try:
            result = await self._tool_result(call, event)
            await call.send(result, re=event.id)
        except (ConnectionClosed, ConnectionError):
            pass
        finally:
            _current_event.reset(token)

    async def _tool_result(self, call: CallContext, event: p.ToolCall) -> p.ToolResult:
        tool = self.tools.get(event.name)
        if tool is None:
            return p.ToolResult(error=f"unknown tool {event.name}")
        if not isinstance(event.arguments, dict):
            return p.ToolResult(error=f"arguments of {event.name} must be a JSON object")
        try:
            return p.ToolResult(result=await tool.fn(call, **event.arguments))
        except ToolError as e:
            return p.ToolResult(error=str(e))
        except TypeError as e:
            return p.ToolResult(error=f"bad arguments for {event.name}: {e}")
        except Exception:
            log.exception("brisvox: tool %s failed", event.name)
            return p.ToolResult(error=f"tool {event.name} failed")
