"""Whatever a field of a real file is replaced with, the mapping either plans it or refuses it with
INVALID_ARGUMENT: no other exception (which the server would turn into INTERNAL)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from strata_memory.domain import agent_files as af
from strata_serving.errors import InvalidArgument
from tests.memory.domain.agent_files.shared_files import SHARED, raw_document, with_files
from tests.memory.domain.agent_files.test_writing import as_stored

BASE = with_files(raw_document(next(p for p in SHARED if p.name == "loop.af")))
EVIE = raw_document(next(p for p in SHARED if p.name == "evie.af"))

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (keys and indexes)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += paths(child, (*prefix, i))
    return found


PATHS = {"loop+files": paths(BASE)[1:], "evie": [p for p in paths(EVIE)[1:] if "tools" not in p[:1]]}


def replaced(document: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    holder: Any = changed
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return changed


@settings(max_examples=300, deadline=None)
@given(data=st.data(), which=st.sampled_from(sorted(PATHS)), value=JSON)
def test_any_value_anywhere_is_planned_or_refused(data: st.DataObject, which: str, value: Any) -> None:
    path = data.draw(st.sampled_from(PATHS[which]))
    document = replaced(BASE if which == "loop+files" else EVIE, path, value)
    try:
        plan = af.plan_import(document)
    except InvalidArgument:
        return
    af.write_document(as_stored(plan), plan.document, created_us=0)  # and written back
