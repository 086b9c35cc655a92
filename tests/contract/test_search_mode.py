"""One search-mode enum: ``strata_memory.domain.model.SearchMode`` names every mode both APIs define.

The conversions at MemoryService's edges are derived from the enum by name, so a mode added to
either proto without the enum (or the other way round) must fail here, not at a caller's request.
"""

from __future__ import annotations

from strata.memory.v1 import memory_service_pb2 as api
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.archival_servicer import SEARCH_MODES
from strata_memory.domain.model import SearchMode
from strata_memory.operations.search import MODE_NAMES, MODES


def _defined(names: list[str]) -> set[str]:
    return {name.removeprefix("SEARCH_MODE_") for name in names if name != "SEARCH_MODE_UNSPECIFIED"}


def test_the_enum_names_exactly_the_modes_both_apis_define() -> None:
    ours = {mode.name for mode in SearchMode}
    assert _defined(list(api.SearchMode.keys())) == ours
    assert _defined(list(rpb.SearchMode.keys())) == ours


def test_each_edge_maps_every_mode_both_ways() -> None:
    assert sorted(SEARCH_MODES.values()) == sorted(SearchMode)
    assert {MODE_NAMES[MODES[mode]] for mode in SearchMode} == set(SearchMode)
    assert MODES[SearchMode.FTS] == rpb.SEARCH_MODE_FTS
    assert SEARCH_MODES[api.SEARCH_MODE_VECTOR] is SearchMode.VECTOR
