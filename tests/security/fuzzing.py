"""Hypothesis strategies for any gRPC request, built from its protobuf descriptor, and a runner.

Values mix the hostile (empty, huge, unicode, out-of-range numbers and enum values, invalid
timestamps, forged page tokens, 100,000-element repeated fields, tool arguments with escaped lone
surrogates, deep JSON and dates at the ends of the representable range with offsets) with the
plausible (ids, labels, tool names and page tokens that exist), so requests get past validation into
the code behind it. Used by ``test_fuzz.py`` and ``scripts/fault_matrix.py``.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from hypothesis import strategies as st

BAD_CODES = frozenset({grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DATA_LOSS})
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_EDGE_INTS = [0, 1, -1, 2, 5, 100, 1000, 1001, 10_000, 2**31 - 1, -(2**31)]
_TOOL_ARGUMENT_KEYS = [
    "label", "content", "old_content", "new_content", "old_str", "new_str", "insert_line", "line",
    "query", "page", "start", "end", "tags", "num_results", "top_k", "path", "file_name", "request_heartbeat",
    "conversation_id", "start_date", "end_date", "archive_id", "value", "description", "limit",
    "start_datetime", "end_datetime", "tag_match_mode", "roles", "old_string", "new_string", "new_memory",
    "command", "old_path", "new_path", "file_text",
]  # fmt: skip
_EDGE_DATES = [
    "0001-01-01", "9999-12-31", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00",
    "0001-01-01T00:00", "9999-12-31T23:59:59.999999+05:30", "2026-02-30", "10000-01-01", "-0001-01-01",
]  # fmt: skip
_HOSTILE_JSON_TEXT = [
    '{"query": "\\ud800"}', '{"content": "a\\udfffb", "label": "human"}', '{"label": "\\ud800"}',
    "[" * 3000, '{"tags": ' + "[" * 3000 + "]" * 3000 + "}", '{"query": ' + "[" * 900 + "]" * 900 + "}",
    '{"\\ud800": 1}', '{"query": "q", "query": "r"}', '{"top_k": 1e400}', '{"insert_line": 1e309}',
]  # fmt: skip
_OFFSETS = ["1e400", "-1e400", str(10**30), str(2**63), str(2**64), "-1", "1.5", "true", "null", '"7"', "[]"]


def _text() -> st.SearchStrategy[str]:
    unicode_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
    sized = st.sampled_from([1, 255, 256, 4_096, 100_001, 1_000_000]).flatmap(
        lambda n: st.sampled_from(["x", "é", "語", "\U0001f600", " ", "\n", "\x00"]).map(lambda c: c * n)
    )
    return st.one_of(st.just(""), unicode_text, sized, st.sampled_from(["-", "/", "..", "%s", "{}", "null"]))


@dataclass
class Pool:
    """Values that exist on the server, offered for fields whose names suggest them."""

    strings: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def for_field(self, name: str) -> Sequence[str]:
        if name in self.strings:
            return self.strings[name]
        if name.endswith("_ids"):
            return self.strings.get(name[:-1], ())
        if name == "id" or name.endswith("_id"):
            return [value for key, values in self.strings.items() if key.endswith("id") for value in values]
        return ()


def _tool_arguments(pool: Pool) -> st.SearchStrategy[str]:
    value = st.one_of(
        _text(),
        st.sampled_from(list(pool.for_field("label")) or ["persona"]),
        st.integers(-5, 10**6),
        st.none(),
        st.booleans(),
        st.lists(st.text(max_size=5), max_size=3),
        st.sampled_from(_EDGE_DATES),
        st.sampled_from(["\ud800", "a\udfffb", "\ud83d", "\ud83d\ude00"]),  # json.dumps escapes them
        st.integers(1, 2_000).map(_nested),
        st.just([f"t{i}" for i in range(100_000)]),
    )
    objects = st.dictionaries(st.sampled_from(_TOOL_ARGUMENT_KEYS), value, max_size=5).map(json.dumps)
    return st.one_of(objects, st.sampled_from(["{}", "not json", "[1,2]", *_HOSTILE_JSON_TEXT]), _text())


def _nested(depth: int) -> Any:
    """A list nested ``depth`` deep (deep enough, JSON's decoder gives up: that must be a clear error)."""
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


def _page_token(pool: Pool) -> st.SearchStrategy[str]:
    """Real tokens with their offset replaced (so the filter digest still matches), forged ones, junk."""
    real = list(pool.for_field("page_token"))
    offsets = st.one_of(st.sampled_from(_OFFSETS), st.integers(-(2**70), 2**70).map(str))
    digests = st.one_of(st.just("0" * 16), st.text(max_size=20))
    forged = st.builds(lambda o, d: _token(f'{{"o": {o}, "s": {json.dumps(d)}}}'), offsets, digests)
    junk = st.one_of(st.binary(max_size=64).map(lambda b: base64.urlsafe_b64encode(b).decode()), _text())
    choices = [forged, junk, st.just("A" * 100_000)]
    if real:
        choices.append(st.builds(_with_offset, st.sampled_from(real), offsets))
    return st.one_of(*choices)


def _token(payload: str) -> str:
    return base64.urlsafe_b64encode(payload.encode()).decode()


def _with_offset(token: str, offset: str) -> str:
    decoded = json.loads(base64.urlsafe_b64decode(token))
    return _token(f'{{"o": {offset}, "s": {json.dumps(decoded["s"])}}}')


def _string(field_descriptor: FieldDescriptor, pool: Pool) -> st.SearchStrategy[str]:
    name = field_descriptor.name
    if name == "arguments":
        return _tool_arguments(pool)
    if name == "page_token":
        return _page_token(pool)
    known = pool.for_field(name)
    if known:
        return st.one_of(st.sampled_from(list(known)), _text())
    return _text()


def _scalar(field_descriptor: FieldDescriptor, pool: Pool) -> st.SearchStrategy[Any]:
    kind = field_descriptor.type
    if kind == FieldDescriptor.TYPE_STRING:
        return _string(field_descriptor, pool)
    if kind == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=64)
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.one_of(
            st.floats(allow_nan=True, allow_infinity=True, width=32), st.sampled_from([0.0, -1.0, 1.0])
        )
    if kind == FieldDescriptor.TYPE_ENUM:
        enum_type: Any = field_descriptor.enum_type
        values = [v.number for v in enum_type.values]
        return st.one_of(st.sampled_from(values), st.integers(-3, 1000))  # proto3 enums are open
    low, high = _INT64 if kind in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64) else _INT32
    if kind in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED32):
        low = 0
    return st.one_of(st.sampled_from([i for i in _EDGE_INTS if low <= i <= high]), st.integers(low, high))


def _timestamp() -> st.SearchStrategy[dict[str, int]]:
    seconds = st.one_of(
        st.integers(0, 4_102_444_800),  # 1970..2100
        st.sampled_from(
            [-62_135_596_800, 253_402_300_799, -(2**40), 2**40, -1]
        ),  # the valid range's ends and beyond
    )
    return st.fixed_dictionaries({"seconds": seconds, "nanos": st.sampled_from([0, 999_999_999, -1, 10**9])})


def message_strategy(descriptor: Descriptor, pool: Pool, depth: int = 0) -> st.SearchStrategy[Message]:
    """Messages of ``descriptor``'s type with any subset of fields set to hostile or plausible values."""
    cls = message_factory.GetMessageClass(descriptor)
    if descriptor.full_name == "google.protobuf.Timestamp":
        return _timestamp().map(lambda values: _build(cls, values))
    if descriptor.full_name == "google.protobuf.FieldMask":
        paths = st.lists(
            st.one_of(st.sampled_from(["value", "limit", "label", "description", "name"]), _text())
        )
        return paths.map(lambda p: _build(cls, {"paths": p[:4]}))
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for field_descriptor in descriptor.fields:
        strategy = _field(field_descriptor, pool, depth)
        if strategy is not None:
            optional[field_descriptor.name] = strategy
    return st.fixed_dictionaries({}, optional=optional).map(lambda values: _build(cls, values))


def _field(field_descriptor: FieldDescriptor, pool: Pool, depth: int) -> st.SearchStrategy[Any] | None:
    message_type = field_descriptor.message_type
    if message_type is not None and _is_map(field_descriptor):
        keys = _scalar(message_type.fields_by_name["key"], pool)
        value_field = message_type.fields_by_name["value"]
        if value_field.message_type is not None:
            return None
        return st.dictionaries(keys, _scalar(value_field, pool), max_size=3)
    if message_type is not None:
        if depth >= 3:
            return None
        single: st.SearchStrategy[Any] = message_strategy(message_type, pool, depth + 1)
    else:
        single = _scalar(field_descriptor, pool)
    if field_descriptor.is_repeated:
        return st.one_of(st.lists(single, max_size=3), _hundred_thousand(field_descriptor, pool))
    return single


def _hundred_thousand(field_descriptor: FieldDescriptor, pool: Pool) -> st.SearchStrategy[list[Any]]:
    """100,000 copies of one small value (a huge list of huge values would not fit a request)."""
    message_type = field_descriptor.message_type
    if message_type is not None:
        return st.just([message_factory.GetMessageClass(message_type)()] * 100_000)
    small: st.SearchStrategy[Any]
    if field_descriptor.type == FieldDescriptor.TYPE_STRING:
        small = st.sampled_from([*pool.for_field(field_descriptor.name), "t", "x1"])
    elif field_descriptor.type == FieldDescriptor.TYPE_BYTES:
        small = st.just(b"b")
    else:
        small = _scalar(field_descriptor, pool)
    return small.map(lambda value: [value] * 100_000)


def _build(cls: type[Message], values: Mapping[str, Any]) -> Message:
    built = cls()
    for name, value in values.items():
        target: Any = getattr(built, name)
        field_descriptor: Any = cls.DESCRIPTOR.fields_by_name[name]
        if isinstance(value, Message):
            target.CopyFrom(value)
        elif isinstance(value, dict):
            if _is_map(field_descriptor):
                target.update(value)
            else:
                target.CopyFrom(_build(type(target), value))
        elif isinstance(value, list):
            target.extend(value)
        else:
            setattr(built, name, value)
    return built


def _is_map(field_descriptor: FieldDescriptor) -> bool:
    message_type = field_descriptor.message_type
    return message_type is not None and bool(message_type.GetOptions().map_entry)


@dataclass
class FuzzReport:
    """What a fuzz run sent and got back; ``bad`` holds every INTERNAL/UNKNOWN answer."""

    calls: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    bad: list[tuple[str, str, str]] = field(default_factory=list)
    leaks: list[tuple[str, str, str]] = field(default_factory=list)
    """(method, marker, request): an OK answer held another tenant's id or text."""

    def record(self, method: str, code: grpc.StatusCode, details: str, request: Message) -> None:
        self.calls += 1
        self.codes[code.name] += 1
        if code in BAD_CODES:
            self.bad.append((method, f"{code.name}: {details}", str(request)[:500]))


def method_path(service: ServiceDescriptor, method: MethodDescriptor) -> str:
    return f"/{service.full_name}/{method.name}"


def call_once(
    channel: grpc.Channel,
    service: ServiceDescriptor,
    method: MethodDescriptor,
    request: Message,
    *,
    metadata: tuple[tuple[str, str | bytes], ...],
    report: FuzzReport,
    timeout: float = 30.0,
    forbidden: Collection[str] = (),
    patient: bool = False,
) -> None:
    """Send one request (draining a server stream) and record its final status. An answer that holds
    a ``forbidden`` marker (another tenant's id or text) the request did not carry is a leak. With
    ``patient``, a deadline is the expected end (a stream that never ends, like health's Watch)."""
    output = message_factory.GetMessageClass(method.output_type)
    path = method_path(service, method)
    code, details = grpc.StatusCode.OK, ""
    answers: list[Message] = []
    try:
        if method.server_streaming:
            stream = channel.unary_stream(
                path, request_serializer=_serialize, response_deserializer=output.FromString
            )
            answers.extend(stream(request, timeout=timeout, metadata=metadata))
        else:
            unary = channel.unary_unary(
                path, request_serializer=_serialize, response_deserializer=output.FromString
            )
            answers.append(unary(request, timeout=timeout, metadata=metadata))
    except grpc.RpcError as error:
        code = error.code()
        details = error.details() or ""
        if patient and code == grpc.StatusCode.DEADLINE_EXCEEDED:
            code = grpc.StatusCode.OK
    report.record(path, code, details, request)
    if forbidden and answers:
        sent = str(request)
        said = "\n".join(str(answer) for answer in answers)
        for marker in forbidden:
            if marker in said and marker not in sent:
                report.leaks.append((path, marker, sent[:500]))


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()
