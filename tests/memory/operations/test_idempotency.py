"""The pure parts of idempotent writes: which request_ids are accepted, and when two requests are one."""

from __future__ import annotations

import pytest

from strata_memory.operations.idempotency import checked_request_id, fingerprint, in_order
from strata_memory.store.records import MessageRecord, PassageRecord, ToolCallRecord
from strata_serving.errors import InvalidArgument

GOOD = "0b9f8a1e-4c1d-4f7a-9a5e-2f0c6b1d3e7a"


def test_a_uuid_in_its_text_form_is_accepted_in_lower_case() -> None:
    assert checked_request_id(GOOD) == GOOD
    assert checked_request_id(GOOD.upper()) == GOOD


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "x",
        GOOD[:-1],
        GOOD + "a",
        "{" + GOOD + "}",
        "urn:uuid:" + GOOD,
        GOOD.replace("-", ""),
        GOOD[:-1] + "g",
    ],
)
def test_anything_else_is_an_invalid_argument_naming_the_field(bad: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        checked_request_id(bad)
    assert refused.value.field_violations[0][0] == "request_id"


def test_a_very_long_request_id_is_shown_cut() -> None:
    with pytest.raises(InvalidArgument) as refused:
        checked_request_id("y" * 10_000)
    assert "(10000 characters)" in refused.value.message
    assert len(refused.value.message) < 200


def message(content: str, **fields: object) -> MessageRecord:
    return MessageRecord("", "", "", "", "user", content, **fields)  # type: ignore[arg-type]


def test_equal_requests_have_one_fingerprint_and_any_difference_changes_it() -> None:
    base = fingerprint("agent-1", "default", [message("hi"), message("there")])
    assert base == fingerprint("agent-1", "default", [message("hi"), message("there")])
    for other in (
        fingerprint("agent-2", "default", [message("hi"), message("there")]),
        fingerprint("agent-1", "other", [message("hi"), message("there")]),
        fingerprint("agent-1", "default", [message("there"), message("hi")]),
        fingerprint("agent-1", "default", [message("hi")]),
        fingerprint("agent-1", "default", [message("hi"), message("there", name="bob")]),
        fingerprint("agent-1", "default", [message("hi"), message("there", created_us=5)]),
        fingerprint(
            "agent-1",
            "default",
            [message("hi"), message("there", tool_calls=(ToolCallRecord("c", "f", "{}"),))],
        ),
    ):
        assert other != base


def test_passage_metadata_counts_by_content_not_order() -> None:
    first = PassageRecord("", "", "", "text", ("a",), {"k": "1", "j": "2"})
    second = PassageRecord("", "", "", "text", ("a",), {"j": "2", "k": "1"})
    assert fingerprint("agent", "", [first]) == fingerprint("agent", "", [second])
    changed = PassageRecord("", "", "", "text", ("a",), {"j": "2", "k": "3"})
    assert fingerprint("agent", "", [changed]) != fingerprint("agent", "", [first])


def test_in_order_follows_the_ids_and_leaves_out_what_is_gone() -> None:
    found = [PassageRecord(i, "", "", i) for i in ("p3", "p1")]
    assert [p.id for p in in_order(["p1", "p2", "p3"], found)] == ["p1", "p3"]
