"""docs/AGENT_PROTOCOL.md's examples validate against the JSON Schema, parse
into the SDK's types, and the SDK writes commands exactly like them. (The
Rust side: crates/brisvox-agent-link/tests/protocol_doc_examples_round_trip.rs.)"""

import dataclasses

import jsonschema
import pytest

from brisvox import protocol as p
from conftest import doc_examples, schema


def validator(name: str = "") -> jsonschema.Draft202012Validator:
    s = schema()
    if name:
        s = {"$ref": f"#/$defs/{name}", "$defs": s["$defs"]}
    return jsonschema.Draft202012Validator(s)


def test_the_schema_is_valid_and_every_example_validates():
    jsonschema.Draft202012Validator.check_schema(schema())
    examples = doc_examples()
    assert len(examples) >= 20
    v = validator()
    for ex in examples:
        errors = [e.message for e in v.iter_errors(ex)]
        assert not errors, (ex, errors)


def test_every_event_example_parses_and_comes_back_the_same():
    events = [ex for ex in doc_examples() if "id" in ex]
    seen = set()
    for ex in events:
        event = p.parse_event(dict(ex))
        seen.add(event.TYPE)
        assert p.event_to_dict(event) == ex
    assert seen == set(p.EVENT_TYPES)


def test_the_sdk_writes_commands_as_the_doc_shows():
    commands = [ex for ex in doc_examples() if "id" not in ex]
    seen = set()
    for ex in commands:
        built = build_command(ex)
        seen.add(built.TYPE)
        assert built.to_dict(ex.get("re")) == ex
    assert seen == set(p.COMMAND_TYPES)


def build_command(ex: dict) -> p.Command:
    body = {k: v for k, v in ex.items() if k not in ("type", "re")}
    kind = ex["type"]
    if kind == "context.update" and "messages" in body:
        m = body["messages"]
        items = tuple(p.ContextMessage(i["role"], i["content"]) for i in m["items"])
        body["messages"] = p.MessagesUpdate(m["mode"], items)
    if kind == "tools.set":
        body["tools"] = tuple(p.ToolSpec(**t) for t in body["tools"])
    return p.COMMAND_TYPES[kind](**body)


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "say"},
        {"type": "say", "text": "x", "loud": True},
        {"type": "tool.result", "re": 1},
        {"type": "tool.result", "re": 1, "result": 1, "error": "x"},
        {"type": "tools.set", "tools": [{"name": "a b", "description": "", "parameters": {}}]},
        {"type": "dtmf", "id": 0, "digits": "1"},
    ],
)
def test_the_schema_refuses_what_the_server_refuses(bad):
    assert not validator().is_valid(bad)


def test_the_sdk_types_have_the_schema_fields():
    defs = schema()["$defs"]
    for kind, cls in p.EVENT_TYPES.items():
        d = defs[f"event.{kind}"]
        fields = {f.name for f in dataclasses.fields(cls)}
        assert fields | {"type"} == set(d["properties"]), kind
        assert set(d["required"]) == fields | {"type"}, kind
    for kind, cls in p.COMMAND_TYPES.items():
        d = defs[f"command.{kind}"]
        d = d["allOf"][0] if "allOf" in d else d
        fields = {f.name for f in dataclasses.fields(cls)}
        assert fields | {"type", "re"} == set(d["properties"]), kind


def test_unknown_or_malformed_events_are_refused():
    for bad in ['{"type":"nope","id":1}', '{"type":"dtmf","id":1}', "[]", "not json"]:
        with pytest.raises(p.ProtocolError):
            p.parse_event(bad)
