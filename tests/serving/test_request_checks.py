"""strata_serving.request_checks walks any service's requests and raises the refusals it is given.

Both services apply it with their own reasons (tests/memory/integration/test_write_contract.py and
tests/retrieval/test_service_errors.py go through a running server); here the walker alone, on
RetrievalService's messages, with refusal classes of the test's own, shows it is not bound to one API.
"""

from __future__ import annotations

import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from google.protobuf.message import Message
from google.protobuf.struct_pb2 import Struct, Value

from strata.memory.v1 import memory_service_pb2 as mpb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_serving.errors import InvalidArgument
from strata_serving.request_checks import Refusals, check_request


class Nul(InvalidArgument):
    default_reason = "TEST_NUL"


class UnknownEnum(InvalidArgument):
    default_reason = "TEST_ENUM"


REFUSALS = Refusals(nul_character=Nul, unknown_enum_value=UnknownEnum)


def _refused(request: Message) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as raised:
        check_request(request, REFUSALS)
    return raised.value


def test_a_clean_request_passes() -> None:
    check_request(rpb.SearchRequest(query="tea", mode=rpb.SEARCH_MODE_HYBRID), REFUSALS)


def test_a_nul_anywhere_is_refused_naming_the_field() -> None:
    nested = rpb.UpsertDocumentsRequest(documents=[rpb.Document(id="a"), rpb.Document(id="b", text="x\x00")])
    error = _refused(nested)
    assert (type(error), error.reason) == (Nul, "TEST_NUL")
    assert [field for field, _ in error.field_violations] == ["documents[1].text"]


def test_a_nul_in_a_map_key_is_refused() -> None:
    request = rpb.UpsertDocumentsRequest(documents=[rpb.Document(id="a", metadata={"k\x00": "v"})])
    assert isinstance(_refused(request), Nul)


def test_an_enum_number_the_proto_does_not_define_is_refused() -> None:
    request = rpb.SearchRequest(query="tea")
    request.mode = 9  # type: ignore[assignment]  # proto3 keeps unknown numbers
    error = _refused(request)
    assert (type(error), error.reason) == (UnknownEnum, "TEST_ENUM")


def _violation(request: Message) -> tuple[str, str]:
    error = _refused(request)
    assert len(error.field_violations) == 1
    return error.field_violations[0]


def test_each_violation_names_its_field_and_the_rule_a_client_reads() -> None:
    value = rpb.UpsertDocumentsRequest(documents=[rpb.Document(id="a", text="x\x00")])
    assert _violation(value) == ("documents[0].text", "must not contain a NUL character (U+0000)")
    key = rpb.UpsertDocumentsRequest(documents=[rpb.Document(id="a", metadata={"k\x00": "v"})])
    assert _violation(key) == ("documents[0].metadata", "keys must not contain a NUL character (U+0000)")
    entry = rpb.UpsertDocumentsRequest(documents=[rpb.Document(id="a", metadata={"k": "v\x00"})])
    assert _violation(entry)[0] == "documents[0].metadata['k']"
    tag = rpb.UpsertDocumentsRequest(documents=[rpb.Document(id="a", tags=["ok", "b\x00d"])])
    assert _violation(tag)[0] == "documents[0].tags[1]"


def test_an_unknown_enum_value_is_named_with_every_value_the_proto_defines() -> None:
    request = rpb.SearchRequest(query="tea")
    request.mode = 9  # type: ignore[assignment]
    assert _violation(request) == (
        "mode",
        "must be one of 0 (SEARCH_MODE_UNSPECIFIED), 1 (SEARCH_MODE_VECTOR), 2 (SEARCH_MODE_FTS), "
        "3 (SEARCH_MODE_HYBRID), got 9",
    )
    repeated = rpb.SearchRequest(query="tea", filter=rpb.DocumentFilter(tenant_id="t"))
    repeated.filter.kinds.extend([rpb.DOCUMENT_KIND_PASSAGE, 9])  # type: ignore[list-item]
    error = _refused(repeated)
    assert isinstance(error, UnknownEnum)
    assert error.field_violations[0][0] == "filter.kinds[1]"


def test_the_first_field_breaking_a_rule_is_the_one_named() -> None:
    request = rpb.UpsertDocumentsRequest(
        documents=[rpb.Document(id="a\x00"), rpb.Document(id="b", text="\x00")]
    )
    assert _violation(request)[0] == "documents[0].id"


def test_a_map_of_messages_is_walked_into_each_value() -> None:
    # no Strata API has one yet; google.protobuf.Struct is map<string, Value>, walked from the top
    nul = Struct(fields={"k": Value(string_value="a\x00b")})
    assert _violation(nul) == ("fields['k'].string_value", "must not contain a NUL character (U+0000)")
    unknown = Struct(fields={"k": Value()})
    unknown.fields["k"].null_value = 7  # type: ignore[assignment]
    error = _refused(unknown)
    assert isinstance(error, UnknownEnum)
    assert error.field_violations[0][0] == "fields['k'].null_value"
    check_request(Struct(fields={"k": Value(string_value="fine")}), REFUSALS)


def test_well_known_types_inside_a_request_are_left_to_their_own_parsers() -> None:
    request = mpb.UpdateBlockRequest(update_mask=FieldMask(paths=["va\x00lue"]))
    check_request(request, REFUSALS)  # a field mask's paths are checked where the mask is read
    after_it = mpb.UpdateBlockRequest(update_mask=FieldMask(paths=["value"]), etag="e\x00")
    assert _violation(after_it)[0] == "etag"  # the fields after a well-known one are still walked
