"""Count the import cycles among Strata's modules: ``python -m scripts.import_cycles``.

A cycle is a strongly connected group of two or more modules, each reachable from every other by
imports (imports under ``TYPE_CHECKING`` and inside functions count: grimp sees them all). The
graph is grimp's, the one import-linter checks the layer contracts on (``make lint``). Product
code (the client and the three service packages) and ``bench`` must have none, and the exit status
says so; ``--all`` adds ``tests`` and ``scripts`` to the graph and reports their cycles too.
Each group is printed with one shortest loop through it, so the import to break can be read off.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping

import grimp

PRODUCT = ("strata", "strata_serving", "strata_memory", "strata_retrieval")
ACYCLIC = (*PRODUCT, "bench")
"""Packages that must have no import cycle (the exit status)."""
SUPPORT = ("tests", "scripts")


def strongly_connected(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the groups of mutually reachable modules (singletons too)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                child = pending.pop()
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(edges.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                groups.append(sorted(group))
    return groups


def cycles(graph: grimp.ImportGraph, packages: Iterable[str]) -> list[list[str]]:
    """The cyclic groups among the modules of ``packages`` (imports to other packages ignored)."""
    roots = tuple(packages)
    own = {m for m in graph.modules if m.split(".")[0] in roots}
    edges = {m: {t for t in graph.find_modules_directly_imported_by(m) if t in own} for m in own}
    return [g for g in strongly_connected(edges) if len(g) > 1 or g[0] in edges[g[0]]]


def loop_through(graph: grimp.ImportGraph, group: list[str]) -> list[str]:
    """One shortest import loop that starts and ends at the group's first module."""
    first = group[0]
    best: tuple[str, ...] | None = None
    for second in group:
        if second != first and graph.direct_import_exists(importer=first, imported=second):
            back = graph.find_shortest_chain(importer=second, imported=first)
            if back is not None and (best is None or len(back) + 1 < len(best)):
                best = (first, *back)
    return list(best) if best is not None else [first, first]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="also count cycles in tests and scripts")
    args = parser.parse_args(argv)
    roots = ACYCLIC + SUPPORT if args.all else ACYCLIC
    graph = grimp.build_graph(*roots, cache_dir=None)
    empty = [root for root in roots if not any(m.startswith(root + ".") for m in graph.modules)]
    if empty:  # e.g. the namespace package `strata` seen through an import hook, not its folders
        print(f"no modules found under {', '.join(empty)}: is `make install` current?", file=sys.stderr)
        return 2
    found = {root: [g for g in cycles(graph, roots) if g[0].split(".")[0] == root] for root in roots}
    for root, groups in found.items():
        print(f"{root}: {len(groups)} import cycle(s)")
        for group in groups:
            print(f"  {len(group)} modules: " + " -> ".join(loop_through(graph, group)))
    product = sum(len(found[root]) for root in PRODUCT)
    print(f"product code: {product} import cycle(s)")
    return 1 if any(found[root] for root in ACYCLIC) else 0


if __name__ == "__main__":
    sys.exit(main())
