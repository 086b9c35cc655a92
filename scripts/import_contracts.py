"""An import-linter contract type the stock ones lack: these modules import only what is listed.

import-linter's own contracts forbid named modules; the pure core needs the opposite rule, an
allow-list, or a new third-party import would slip past a list of forbidden ones. A
``only_imports`` contract (registered in pyproject.toml's ``[tool.importlinter]``) passes when every
direct import made by a module of ``source_modules`` (packages included with their descendants) is
one of: a module of the standard library (``sys.stdlib_module_names``), a module inside the same
source package, or a module inside one of ``allowed_modules``. Direct imports are enough: each
allowed module is itself a source of the same contract, so nothing reaches further by a chain.
The graph must be built with ``include_external_packages = true`` so third-party imports are seen.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import cast

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck
from importlinter.domain.imports import Module


def _within(name: str, roots: Iterable[str]) -> bool:
    return any(name == root or name.startswith(root + ".") for root in roots)


class OnlyImportsContract(Contract):
    """Each source module imports only the standard library, its own package and ``allowed_modules``."""

    type_name = "only_imports"

    source_modules = fields.SetField(subfield=fields.ModuleField())
    allowed_modules = fields.SetField(subfield=fields.ModuleField(), required=False)

    def _names(self, field: str) -> list[str]:
        """The module names a field was given (the fields are set from pyproject by the base class)."""
        modules = cast("Iterable[Module] | None", getattr(self, field))
        return sorted(module.name for module in modules or ())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        sources, allowed = self._names("source_modules"), self._names("allowed_modules")
        violations: list[dict[str, object]] = []
        for source in sources:
            if source not in graph.modules:
                raise ValueError(f"only_imports: {source} is not in the import graph")
            for importer in sorted({source} | graph.find_descendants(source)):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    top = imported.split(".")[0]
                    if top in sys.stdlib_module_names or _within(imported, [source, *allowed]):
                        continue
                    details = graph.get_import_details(importer=importer, imported=imported)
                    lines = sorted({detail["line_number"] for detail in details})
                    violations.append({"importer": importer, "imported": imported, "lines": lines})
        return ContractCheck(kept=not violations, metadata={"violations": violations})

    def render_broken_contract(self, check: ContractCheck) -> None:
        allowed = ", ".join(self._names("allowed_modules")) or "nothing else"
        output.print_error(f"Only the standard library and {allowed} may be imported:")
        output.new_line()
        for violation in check.metadata["violations"]:
            lines = ", ".join(f"l.{line}" for line in violation["lines"])
            output.print_error(
                f"-   {violation['importer']} -> {violation['imported']} ({lines})", bold=False
            )
        output.new_line()
