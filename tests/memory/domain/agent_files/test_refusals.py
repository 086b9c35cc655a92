"""Broken and hostile files are refused whole, naming the path inside the file."""

from __future__ import annotations

import pytest

from strata_memory.domain import agent_files as af
from strata_serving.errors import InvalidArgument
from tests.memory.domain.agent_files.hostile import BASE, VARIANTS, Variant
from tests.memory.domain.agent_files.shared_files import encoded, raw_document

LIMIT = 7 * 1024 * 1024


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_each_broken_file_is_refused_naming_where(variant: Variant) -> None:
    with pytest.raises(InvalidArgument) as caught:
        af.plan_import(af.read_document(variant.build(), max_bytes=LIMIT))
    assert variant.names in str(caught.value)
    assert [field for field, _ in caught.value.field_violations] == ["agent_file"]


def test_a_file_over_the_size_limit_is_refused_before_it_is_read() -> None:
    data = BASE.read_bytes()
    with pytest.raises(InvalidArgument, match=f"is {len(data)} bytes; at most {len(data) - 1} bytes"):
        af.read_document(data, max_bytes=len(data) - 1)
    assert af.read_document(data, max_bytes=len(data)) == raw_document(BASE)


def test_a_value_exactly_at_its_limit_is_accepted() -> None:
    document = raw_document(BASE)
    at_limit = [b for b in document["blocks"] if len(b["value"]) == b["limit"]]
    assert at_limit, "evie.af fills blocks exactly to their limit"
    planned = {b.file_id: b.block for b in af.plan_import(document).blocks}
    assert all(planned[b["id"]].value == b["value"] for b in at_limit)


@pytest.mark.parametrize(("levels", "accepted"), [(af.MAX_DEPTH - 3, True), (af.MAX_DEPTH - 2, False)])
def test_nesting_up_to_the_limit_is_accepted(levels: int, accepted: bool) -> None:
    document = raw_document(BASE)
    value: object = "deep"
    for _ in range(levels):  # above the metadata: the document, its agents array, the agent
        value = {"a": value}
    document["agents"][0]["metadata"] = value
    if accepted:
        read = af.read_document(encoded(document), max_bytes=LIMIT)
        assert af.plan_import(read).agents[0].residue["metadata"] == value
    else:
        with pytest.raises(InvalidArgument, match="nested deeper than 64 levels"):
            af.read_document(encoded(document), max_bytes=LIMIT)
