"""``strata_memory.conversions`` round-trips every field a caller can set, found from the descriptors.

Each resource a caller sends (Agent, Block, File, Message, Passage) is filled field by field from
its descriptor (every scalar, enum, map, repeated and nested field gets a value of its type), taken
in with the ``*_from_proto`` function and given back with ``*_to_proto``. Every field must come back
as sent unless the proto marks it "Output only." or it is named below with the reason. A field added
to a resource and forgotten by a conversion fails here. The enum tables are checked against the
enums' descriptors the same way: every defined value maps to the domain and back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from scripts.proto_descriptors import FIELD, MESSAGE, comments, load
from strata.memory.v1 import resources_pb2 as pb
from strata_memory import conversions as conv
from strata_memory.store.records import BlockRecord

MOMENT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)

ROUND_TRIPS: dict[str, Callable[[Any], Message]] = {
    "Agent": lambda m: conv.agent_to_proto(conv.agent_from_proto(m, m.tenant_id)),
    "Block": lambda m: conv.block_to_proto(BlockRecord(conv.block_from_proto(m), m.tenant_id, 0, 0)),
    "File": lambda m: conv.file_to_proto(conv.file_from_proto(m, m.agent_id)),
    "Message": lambda m: conv.message_to_proto(conv.message_from_proto(m, 0)),
    "Passage": lambda m: conv.passage_to_proto(conv.passage_from_proto(m)),
}
"""Resource -> what MemoryService sends back after taking it in (scope ids passed as the RPC passes them)."""

SET_BY_THE_SERVER = {
    ("Agent", "create_time"): "stamped when the agent is stored",
    ("Agent", "update_time"): "stamped when the agent is stored",
    ("Block", "create_time"): "stamped when the block is stored",
    ("Block", "update_time"): "stamped when the block is stored",
    ("File", "tenant_id"): "taken from the call's credentials",
    ("File", "create_time"): "stamped when the file is stored",
    ("File", "update_time"): "stamped when the file is stored",
    ("Message", "tenant_id"): "taken from the call's credentials",
    ("Message", "agent_id"): "taken from AppendMessagesRequest.agent_id",
    ("Message", "conversation_id"): "taken from AppendMessagesRequest.conversation_id",
    ("Passage", "tenant_id"): "taken from the call's credentials",
    ("Passage", "archive_id"): "taken from the request naming the archive",
}
"""Fields a caller may fill but MemoryService sets from elsewhere, so they do not round-trip."""


def _output_only() -> set[tuple[str, str]]:
    """(message, field) pairs whose proto comment starts with "Output only."."""
    [resources] = [f for f in load() if f.name == "strata/memory/v1/resources.proto"]
    found = comments(resources)
    return {
        (message.name, field.name)
        for m, message in enumerate(resources.message_type)
        for f, field in enumerate(message.field)
        if found.get((MESSAGE, m, FIELD, f), "").startswith("Output only.")
    }


OUTPUT_ONLY = _output_only()


def _value(field: FieldDescriptor) -> Any:
    """A value of the field's type that no default equals."""
    if field.enum_type is not None:
        return max(v.number for v in field.enum_type.values)
    if field.type == FieldDescriptor.TYPE_STRING:
        return f"{field.name} ✓"
    if field.type == FieldDescriptor.TYPE_BOOL:
        return True
    if field.type in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64):
        return 7
    raise AssertionError(f"no test value for {field.full_name} (type {field.type}): add one")


def _fill(message: Message, descriptor: Descriptor) -> None:
    for field in descriptor.fields:
        nested = field.message_type
        if nested is not None and nested.GetOptions().map_entry:
            getattr(message, field.name)["key ✓"] = _value(nested.fields_by_name["value"])
        elif nested is not None and nested.full_name == "google.protobuf.Timestamp":
            getattr(message, field.name).FromDatetime(MOMENT)
        elif nested is not None:
            items = (
                [getattr(message, field.name).add()] if field.is_repeated else [getattr(message, field.name)]
            )
            for item in items:
                _fill(item, nested)
        elif field.is_repeated:
            getattr(message, field.name).extend([_value(field), _value(field)])
        else:
            setattr(message, field.name, _value(field))


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_every_field_a_caller_sets_comes_back(name: str) -> None:
    sent = getattr(pb, name)()
    _fill(sent, sent.DESCRIPTOR)
    back = ROUND_TRIPS[name](sent)
    lost = [
        field.name
        for field in sent.DESCRIPTOR.fields
        if (name, field.name) not in OUTPUT_ONLY | set(SET_BY_THE_SERVER)
        and getattr(back, field.name) != getattr(sent, field.name)
    ]
    assert lost == [], f"{name}: these fields do not survive the conversions: {lost}"


def test_the_exceptions_name_real_fields_that_are_not_output_only() -> None:
    for message, field in SET_BY_THE_SERVER:
        assert field in getattr(pb, message).DESCRIPTOR.fields_by_name
        assert (message, field) not in OUTPUT_ONLY


@pytest.mark.parametrize(
    ("table", "enum"),
    [
        (conv.RENDER_MODES, pb.RenderMode),
        (conv.RECOMPILE_POLICIES, pb.RecompilePolicy),
        (conv.RESULT_STYLES, pb.ToolResultStyle),
        (conv.ROLES, pb.MessageRole),
    ],
)
def test_each_enum_table_maps_every_defined_value_both_ways(table: dict[Any, Any], enum: Any) -> None:
    defined = {v.number for v in enum.DESCRIPTOR.values if v.number != 0}
    assert set(table) == defined
    assert len(set(table.values())) == len(table)  # one domain value per wire value: the inverse exists


def test_a_message_with_every_role_round_trips() -> None:
    for role in conv.ROLES:
        sent = pb.Message(role=role, content="hi")
        assert conv.message_to_proto(conv.message_from_proto(sent, 0)).role == role


def test_an_agent_with_unset_enums_takes_the_documented_defaults() -> None:
    back = conv.agent_to_proto(replace(conv.agent_from_proto(pb.Agent(name="a"), "t"), id="agent-1"))
    assert (back.render_mode, back.recompile_policy, back.tool_result_style, back.timezone) == (
        pb.RENDER_MODE_STANDARD,
        pb.RECOMPILE_POLICY_ON_EDIT,
        pb.TOOL_RESULT_STYLE_FULL_VALUE,
        "UTC",
    )
