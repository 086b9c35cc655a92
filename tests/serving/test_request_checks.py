"""strata_serving.request_checks walks any service's requests and raises the refusals it is given.

Both services apply it with their own reasons (tests/memory/integration/test_write_contract.py and
tests/retrieval/test_service_errors.py go through a running server); here the walker alone, on
RetrievalService's messages, with refusal classes of the test's own, shows it is not bound to one API.
"""

from __future__ import annotations

import pytest

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_serving.errors import InvalidArgument
from strata_serving.request_checks import Refusals, check_request


class Nul(InvalidArgument):
    default_reason = "TEST_NUL"


class UnknownEnum(InvalidArgument):
    default_reason = "TEST_ENUM"


REFUSALS = Refusals(nul_character=Nul, unknown_enum_value=UnknownEnum)


def _refused(request: rpb.SearchRequest | rpb.UpsertDocumentsRequest) -> InvalidArgument:
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
