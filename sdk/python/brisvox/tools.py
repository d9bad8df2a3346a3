"""Tools from plain Python functions: the JSON Schema of the arguments comes
from the signature's type hints, the description from the docstring.

    @agent.tool
    async def order_status(ctx: CallContext, order_id: str) -> dict:
        '''Status of an order.

        Args:
            order_id: The order number on the receipt.
        '''

The first parameter (the call's context) is not part of the schema.
"""

from __future__ import annotations

import inspect
import re
import typing
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Literal, Optional, Union

from .protocol import ToolSpec

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolError(Exception):
    """Raise in a tool to give the model an error result with this message."""


@dataclass
class Tool:
    """A tool the agent serves."""

    name: str
    description: str
    parameters: dict
    fn: Callable[..., Awaitable[Any]]

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)


def _json_type(hint: Any) -> dict:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is dict or origin is dict:
        return {"type": "object"}
    if hint is list or origin is list:
        return {"type": "array", "items": _json_type(args[0])} if args else {"type": "array"}
    if origin is Literal:
        return {"enum": list(args)}
    if origin is Union:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _json_type(rest[0])
    raise TypeError(f"no JSON Schema for the type {hint!r}: give parameters= explicitly")


def _arg_docs(doc: str) -> dict[str, str]:
    """`name: text` lines under an `Args:` heading (Google style)."""
    out: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if not in_args:
            continue
        if re.match(r"^\w+:$", stripped):
            in_args = False  # the next heading (Returns:, Raises:)
            continue
        m = re.match(r"^(\w+)\s*(\([^)]*\))?:\s*(.*)$", stripped)
        if m:
            out[m.group(1)] = m.group(3)
    return out


def tool_from_function(
    fn: Callable[..., Awaitable[Any]],
    name: Optional[str] = None,
    description: Optional[str] = None,
    parameters: Optional[dict] = None,
) -> Tool:
    """A Tool from an async function whose first parameter is the call context."""
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"tool {fn.__name__} must be an async function")
    name = name or fn.__name__
    if not _NAME.match(name):
        raise ValueError(f"tool name {name!r} must be 1 to 64 of A-Z a-z 0-9 _ -")
    doc = inspect.getdoc(fn) or ""
    if description is None:
        description = doc.split("\n\n")[0].strip() or name
    if parameters is None:
        parameters = _schema_of(fn, _arg_docs(doc))
    if not isinstance(parameters, dict):
        raise TypeError(f"tool {name}: parameters must be a JSON Schema object (a dict)")
    return Tool(name, description, parameters, fn)


def _schema_of(fn: Callable[..., Any], docs: dict[str, str]) -> dict:
    hints = typing.get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())[1:]
    properties: dict[str, dict] = {}
    required: list[str] = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"tool {fn.__name__}: *args and **kwargs are not supported")
        prop = _json_type(hints.get(p.name, str))
        if p.name in docs:
            prop["description"] = docs[p.name]
        properties[p.name] = prop
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema
