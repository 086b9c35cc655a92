"""One rule per contract on every write path, through a real MemoryService: line endings, NUL
characters, unknown enum values, the texts DESIGN.md quotes, empty blocks and label characters.

The NUL and enum cases are generated from the descriptors: every string field and every enum field
of every MemoryService request (nested messages included) is tried, so a new field is covered.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.field_mask_pb2 import FieldMask
from google.protobuf.message import Message

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_serving.status import bad_request_from
from tests.memory.integration.conftest import Stub, block_value, expect_error, new_agent, run_tool

INVALID = grpc.StatusCode.INVALID_ARGUMENT
_SERVICE = api.DESCRIPTOR.services_by_name["MemoryService"]
_SKIPPED_TYPES = ("google.protobuf.",)
"""Well-known types (Timestamp, FieldMask) have no string or enum a caller fills in as text."""


def _fields(
    descriptor: Descriptor, prefix: str = "", depth: int = 0
) -> Iterator[tuple[str, FieldDescriptor]]:
    """Every (path, field) under ``descriptor``; repeated fields use index ``[0]``, map values the
    key ``[k]`` and map keys the suffix ``{key}`` (the key itself is the value under test)."""
    for field in descriptor.fields:
        path = f"{prefix}{field.name}"
        message = field.message_type
        if message is not None and message.GetOptions().map_entry:
            yield f"{path}[k]", message.fields_by_name["value"]
            yield f"{path}{{key}}", message.fields_by_name["key"]  # the key is a string like any other
            continue
        if field.is_repeated:
            path += "[0]"
        if message is None:
            yield path, field
        elif not message.full_name.startswith(_SKIPPED_TYPES) and depth < 3:
            yield from _fields(message, f"{path}.", depth + 1)


def _cases(kind: int) -> list[tuple[str, str]]:
    return [
        (method.name, path)
        for method in _SERVICE.methods
        for path, field in _fields(method.input_type)
        if field.type == kind
    ]


def _request_with(rpc: str, path: str, value: object) -> Message:
    """The RPC's request with only the field at ``path`` set to ``value``."""
    request: Message = getattr(api, _SERVICE.methods_by_name[rpc].input_type.name)()
    holder: Message = request
    steps = path.split(".")
    for step in steps[:-1]:
        name, repeated = step.removesuffix("[0]"), step.endswith("[0]")
        holder = getattr(holder, name).add() if repeated else getattr(holder, name)
    last = steps[-1]
    if last.endswith("[k]"):
        getattr(holder, last.removesuffix("[k]"))["k"] = value
    elif last.endswith("{key}"):
        getattr(holder, last.removesuffix("{key}"))[value] = "v"
    elif last.endswith("[0]"):
        getattr(holder, last.removesuffix("[0]")).append(value)
    else:
        setattr(holder, last, value)
    return request


def _violated_field(error: grpc.aio.AioRpcError) -> str:
    violations = bad_request_from(error.trailing_metadata())
    assert violations is not None, error.details()
    return str(violations.field_violations[0].field)


STRING_FIELDS = _cases(FieldDescriptor.TYPE_STRING)
ENUM_FIELDS = _cases(FieldDescriptor.TYPE_ENUM)


def test_the_generated_cases_reach_the_fields_named_in_issue_14() -> None:
    assert ("SearchArchival", "tag_match") in ENUM_FIELDS
    assert ("CreateAgent", "blocks[0].value") in STRING_FIELDS
    assert ("UpdateBlock", "block.metadata[k]") in STRING_FIELDS
    assert ("UpdateBlock", "block.metadata{key}") in STRING_FIELDS
    assert ("CreatePassages", "passages[0].metadata{key}") in STRING_FIELDS


@pytest.mark.parametrize(("rpc", "path"), STRING_FIELDS)
async def test_a_nul_character_is_refused_in_every_string_field(stub: Stub, rpc: str, path: str) -> None:
    request = _request_with(rpc, path, "be\x00fore")
    call = getattr(stub, rpc)(request)
    if rpc == "Reindex":
        call = anext(aiter(call))
    error = await expect_error(call, INVALID, "NUL_CHARACTER")
    assert _violated_field(error) == path.replace("[k]", "['k']").removesuffix("{key}")


@pytest.mark.parametrize(("rpc", "path"), ENUM_FIELDS)
async def test_an_unknown_enum_value_is_refused_in_every_enum_field(stub: Stub, rpc: str, path: str) -> None:
    request = _request_with(rpc, path, 9)
    call = getattr(stub, rpc)(request)
    if rpc == "Reindex":
        call = anext(aiter(call))
    error = await expect_error(call, INVALID, "UNKNOWN_ENUM_VALUE")
    assert _violated_field(error) == path


async def test_a_nul_inside_tool_arguments_is_refused_and_changes_nothing(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="notes", value="kept"))
    arguments = json.dumps({"label": "notes", "content": "be\u0000fore"})
    result = await run_tool(stub, agent.id, "core_memory_append", arguments)
    assert not result.ok
    assert result.reason == "NUL_CHARACTER"
    assert "'content'" in result.text
    assert await block_value(stub, agent.id, "notes") == "kept"


async def test_every_write_path_stores_lf_line_endings(stub: Stub) -> None:
    raw = "one\r\ntwo\rthree"
    agent = await stub.CreateAgent(
        api.CreateAgentRequest(
            agent=pb.Agent(name="sam", system="be\r\nkind"),
            blocks=[pb.Block(label="human", value=raw, description="about\r\nthem")],
        )
    )
    assert agent.system == "be\nkind"
    human = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human")))
    assert (human.value, human.description, human.chars_current) == ("one\ntwo\nthree", "about\nthem", 13)
    created = await stub.CreateBlock(
        api.CreateBlockRequest(block=pb.Block(label="notes", value=raw), agent_id=agent.id)
    )
    assert created.value == "one\ntwo\nthree"
    updated = await stub.UpdateBlock(
        api.UpdateBlockRequest(
            ref=pb.BlockRef(block_id=created.id),
            block=pb.Block(value="a\r\nb", description="c\rd"),
            update_mask=FieldMask(paths=["value", "description"]),
        )
    )
    assert (updated.value, updated.description) == ("a\nb", "c\nd")
    renamed = await stub.UpdateAgent(
        api.UpdateAgentRequest(
            agent=pb.Agent(id=agent.id, system="x\ry"), update_mask=FieldMask(paths=["system"])
        )
    )
    assert renamed.system == "x\ny"
    file = await stub.AttachFile(
        api.AttachFileRequest(
            agent_id=agent.id, file=pb.File(directory="docs", name="a.md", content="p\r\nq")
        )
    )
    assert file.content == "p\nq"


async def test_read_only_refusal_reads_exactly_as_design_quotes_it(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="policy", value="v", read_only=True))
    result = await run_tool(
        stub, agent.id, "core_memory_append", json.dumps({"label": "policy", "content": "x"})
    )
    assert (result.ok, result.reason) == (False, "READ_ONLY_BLOCK")
    assert result.text == "This block is read-only and cannot be edited."


async def test_the_line_number_guard_reads_as_design_quotes_it_for_prefix_and_warning(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="notes", value="v"))
    tail = (
        "contains a line number prefix, which is not allowed. Do not include line numbers when calling "
        "memory tools (line numbers are for display purposes only)."
    )
    for text in (
        "1→ v",
        "# NOTE: Line numbers shown below (with arrows like '1→') are to help during editing",
    ):
        arguments = json.dumps({"label": "notes", "new_string": text})
        result = await run_tool(stub, agent.id, "memory_insert", arguments)
        assert (result.ok, result.reason, result.text) == (False, "LINE_NUMBER_PREFIX", f"new_string {tail}")
    assert await block_value(stub, agent.id, "notes") == "v"


async def test_append_and_insert_agree_on_an_empty_block(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="a"), pb.Block(label="b"))
    await run_tool(stub, agent.id, "core_memory_append", json.dumps({"label": "a", "content": "first"}))
    await run_tool(stub, agent.id, "memory_insert", json.dumps({"label": "b", "new_string": "first"}))
    assert await block_value(stub, agent.id, "a") == await block_value(stub, agent.id, "b") == "first"


BAD_LABELS = [
    "hu\u200bman",  # zero-width space
    "human\u202e",  # right-to-left override
    "\u2066notes\u2069",  # bidi isolates
    "notes\ufeff",  # byte-order mark / zero-width no-break space
    "no\u00adtes",  # soft hyphen
    "hum\u0430n",  # a Cyrillic a among Latin letters: a look-alike of "human"
    "\uff48\uff55\uff4d\uff41\uff4e",  # fullwidth Latin: not in NFKC form
    "notes\u3164",  # Hangul filler: a letter that shows nothing
]


@pytest.mark.parametrize("label", BAD_LABELS, ids=lambda label: label.encode("unicode_escape").decode())
async def test_labels_refuse_invisible_bidi_and_mixed_script_characters(stub: Stub, label: str) -> None:
    agent = await new_agent(stub)
    error = await expect_error(
        stub.CreateBlock(api.CreateBlockRequest(block=pb.Block(label=label), agent_id=agent.id)),
        INVALID,
        "INVALID_LABEL",
    )
    assert _violated_field(error) == "label"
    result = await run_tool(stub, agent.id, "memory_rethink", json.dumps({"label": label, "new_memory": "x"}))
    assert (result.ok, result.reason) == (False, "INVALID_LABEL")
    assert list((await stub.GetAgent(api.GetAgentRequest(agent_id=agent.id))).block_labels) == [
        "persona",
        "human",
    ]


async def test_labels_in_one_script_per_segment_are_accepted(stub: Stub) -> None:
    agent = await new_agent(stub)
    for label in ("заметки", "notes/заметки", "日本語メモ", "système/café", "notes_2"):
        created = await stub.CreateBlock(
            api.CreateBlockRequest(block=pb.Block(label=label), agent_id=agent.id)
        )
        assert created.label == label
