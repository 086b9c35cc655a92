"""The tools behind the layer map: the cycle counter and the ``only_imports`` contract type.

The contracts themselves run in ``make lint`` (lint-imports); these tests show the two pieces of
our own code there can see what they are meant to see, on small graphs built by hand.
"""

from __future__ import annotations

import grimp

from scripts.import_contracts import OnlyImportsContract
from scripts.import_cycles import PRODUCT, cycles, strongly_connected


def _graph(edges: dict[str, list[str]]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in edges.items():
        graph.add_module(importer)
        for target in imported:
            graph.add_import(importer=importer, imported=target, line_number=1, line_contents="import x")
    return graph


def test_strongly_connected_groups_a_loop_and_leaves_a_chain_alone() -> None:
    groups = strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()})
    assert sorted(groups) == [["a", "b", "c"], ["d"], ["e"]]


def test_cycles_counts_each_loop_once_and_ignores_acyclic_imports() -> None:
    graph = _graph({"pkg.a": ["pkg.b"], "pkg.b": ["pkg.a"], "pkg.c": ["pkg.a", "json"], "pkg.d": ["pkg.d"]})
    assert cycles(graph, ["pkg"]) == [["pkg.a", "pkg.b"], ["pkg.d"]]


def test_product_code_has_no_import_cycles() -> None:
    assert cycles(grimp.build_graph(*PRODUCT, cache_dir=None), PRODUCT) == []


def test_the_graph_sees_both_distributions_of_the_strata_namespace() -> None:
    """`strata` spans strata-client and strata-stubs: the contracts see both halves, or they pass empty."""
    modules = grimp.build_graph("strata", cache_dir=None).modules
    assert {"strata.cli.main", "strata.client.async_base"} <= modules  # clients/python
    stubs = {"strata.memory.v1.memory_service_pb2", "strata.contract.channel_policy"}  # proto/python
    assert stubs <= modules


def _only_imports(graph: grimp.ImportGraph, allowed: list[str]) -> list[tuple[object, object]]:
    contract = OnlyImportsContract(
        "pure", session_options={}, contract_options={"source_modules": ["core"], "allowed_modules": allowed}
    )
    check = contract.check(graph, verbose=False)
    return [(v["importer"], v["imported"]) for v in check.metadata["violations"]]


def test_only_imports_allows_stdlib_own_package_and_the_listed_modules() -> None:
    graph = _graph(
        {"core": [], "core.model": ["dataclasses", "core.errors", "vocab.errors"], "core.errors": []}
    )
    assert _only_imports(graph, ["vocab.errors"]) == []


def test_only_imports_names_each_other_import() -> None:
    graph = _graph({"core": [], "core.model": ["grpc", "vocab.errors", "app.config"], "app.config": []})
    assert _only_imports(graph, []) == [
        ("core.model", "app.config"),
        ("core.model", "grpc"),
        ("core.model", "vocab.errors"),
    ]
