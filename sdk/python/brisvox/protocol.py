"""The agent link's messages as Python types (docs/AGENT_PROTOCOL.md).

Events come from the server (each has an ``id``); commands go to it (each
may name the event it answers with ``re``). Every class here matches one
definition in ``docs/agent-protocol.schema.json``; the tests check the field
names and required fields against the schema and validate every command the
SDK writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, Optional, Union

PROTOCOL_VERSION = 1


class ProtocolError(ValueError):
    """A frame from the server that is not a valid event."""


# Events (server to agent) ----------------------------------------------------


@dataclass(frozen=True)
class Event:
    """Base of every event: ``id`` is unique within the call."""

    TYPE: ClassVar[str] = ""
    id: int


@dataclass(frozen=True)
class CallStarted(Event):
    TYPE: ClassVar[str] = "call.started"
    protocol: int
    call_id: str
    route: str
    caller: Optional[str]
    metadata: dict
    resumed: bool


@dataclass(frozen=True)
class UserStartedSpeaking(Event):
    TYPE: ClassVar[str] = "user.started_speaking"


@dataclass(frozen=True)
class UserStoppedSpeaking(Event):
    TYPE: ClassVar[str] = "user.stopped_speaking"


@dataclass(frozen=True)
class UserTranscript(Event):
    TYPE: ClassVar[str] = "user.transcript"
    text: str
    final: bool


@dataclass(frozen=True)
class BotText(Event):
    TYPE: ClassVar[str] = "bot.text"
    turn: int
    text: str


@dataclass(frozen=True)
class BotStartedSpeaking(Event):
    TYPE: ClassVar[str] = "bot.started_speaking"
    turn: int


@dataclass(frozen=True)
class BotStoppedSpeaking(Event):
    TYPE: ClassVar[str] = "bot.stopped_speaking"
    turn: int


@dataclass(frozen=True)
class BotInterrupted(Event):
    TYPE: ClassVar[str] = "bot.interrupted"
    turn: int
    heard: str


@dataclass(frozen=True)
class ToolCall(Event):
    TYPE: ClassVar[str] = "tool.call"
    turn: int
    call_id: str
    name: str
    arguments: Any


@dataclass(frozen=True)
class Dtmf(Event):
    TYPE: ClassVar[str] = "dtmf"
    digits: str


@dataclass(frozen=True)
class TurnMetrics(Event):
    TYPE: ClassVar[str] = "turn.metrics"
    turn: int
    metrics_ms: dict


@dataclass(frozen=True)
class CallEnded(Event):
    TYPE: ClassVar[str] = "call.ended"
    reason: str


@dataclass(frozen=True)
class Error(Event):
    TYPE: ClassVar[str] = "error"
    re: Optional[int]
    message: str


EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        CallStarted,
        UserStartedSpeaking,
        UserStoppedSpeaking,
        UserTranscript,
        BotText,
        BotStartedSpeaking,
        BotStoppedSpeaking,
        BotInterrupted,
        ToolCall,
        Dtmf,
        TurnMetrics,
        CallEnded,
        Error,
    )
}


def parse_event(text: Union[str, bytes, dict]) -> Event:
    """One event frame (JSON text or an already parsed object) as its class.

    Raises ProtocolError for anything but a known event with exactly its fields.
    """
    try:
        obj = json.loads(text) if isinstance(text, (str, bytes)) else dict(text)
    except ValueError as e:
        raise ProtocolError(f"not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("an event is a JSON object")
    kind = obj.pop("type", None)
    cls = EVENT_TYPES.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise ProtocolError(f"unknown event type {kind!r}")
    names = {f.name for f in fields(cls)}
    if set(obj) != names:
        missing, extra = names - set(obj), set(obj) - names
        raise ProtocolError(f"{kind}: missing {sorted(missing)}, unknown {sorted(extra)}")
    return cls(**obj)


def event_to_dict(event: Event) -> dict:
    """The event as its JSON object (for tests and logs)."""
    out = {"type": event.TYPE}
    out.update({f.name: getattr(event, f.name) for f in fields(event)})
    return out


# Commands (agent to server) --------------------------------------------------


@dataclass(frozen=True)
class Command:
    """Base of every command: ``re`` names the event it answers, if any."""

    TYPE: ClassVar[str] = ""
    OMIT_NONE: ClassVar[tuple[str, ...]] = ()

    def to_dict(self, re: Optional[int] = None) -> dict:
        out: dict[str, Any] = {"type": self.TYPE}
        if re is not None:
            out["re"] = re
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name in self.OMIT_NONE:
                continue
            out[f.name] = _plain(value)
        return out

    def to_json(self, re: Optional[int] = None) -> str:
        return json.dumps(self.to_dict(re), separators=(",", ":"))


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "to_dict") and not isinstance(value, Command):
        return value.to_dict()
    return value


@dataclass(frozen=True)
class Say(Command):
    TYPE: ClassVar[str] = "say"
    text: str
    interrupt: bool = False


@dataclass(frozen=True)
class ContextMessage:
    role: Literal["system", "user", "assistant"]
    content: str

    def to_dict(self) -> dict:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class MessagesUpdate:
    mode: Literal["append", "replace"]
    items: tuple[ContextMessage, ...]

    def to_dict(self) -> dict:
        return {"mode": self.mode, "items": [m.to_dict() for m in self.items]}


@dataclass(frozen=True)
class ContextUpdate(Command):
    TYPE: ClassVar[str] = "context.update"
    OMIT_NONE: ClassVar[tuple[str, ...]] = ("system_prompt", "messages")
    system_prompt: Optional[str] = None
    messages: Optional[MessagesUpdate] = None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True)
class ToolsSet(Command):
    TYPE: ClassVar[str] = "tools.set"
    tools: tuple[ToolSpec, ...] = field(default_factory=tuple)


_UNSET: Any = object()


@dataclass(frozen=True)
class ToolResult(Command):
    """Exactly one of ``result`` and ``error``; ``re`` is required when sent."""

    TYPE: ClassVar[str] = "tool.result"
    result: Any = _UNSET
    error: Optional[str] = None

    def to_dict(self, re: Optional[int] = None) -> dict:
        if re is None:
            raise ValueError("a tool.result answers a tool.call: re is required")
        if (self.result is _UNSET) == (self.error is None):
            raise ValueError("a tool.result has exactly one of result and error")
        out: dict[str, Any] = {"type": self.TYPE, "re": re}
        if self.error is not None:
            out["error"] = self.error
        else:
            out["result"] = self.result
        return out


@dataclass(frozen=True)
class Respond(Command):
    TYPE: ClassVar[str] = "respond"


@dataclass(frozen=True)
class CallEnd(Command):
    TYPE: ClassVar[str] = "call.end"
    OMIT_NONE: ClassVar[tuple[str, ...]] = ("say", "reason")
    say: Optional[str] = None
    reason: Optional[str] = None


@dataclass(frozen=True)
class CallTransfer(Command):
    TYPE: ClassVar[str] = "call.transfer"
    OMIT_NONE: ClassVar[tuple[str, ...]] = ("say",)
    to: str
    say: Optional[str] = None


COMMAND_TYPES: dict[str, type[Command]] = {
    cls.TYPE: cls
    for cls in (Say, ContextUpdate, ToolsSet, ToolResult, Respond, CallEnd, CallTransfer)
}
