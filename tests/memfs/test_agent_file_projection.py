"""The MemFS projection of an imported Letta agent is its blocks: one file per block of the .af file,
value, limit, read-only flag and description as the file holds them."""

from __future__ import annotations

from pathlib import Path

from strata.memfs.layout import parse_block_file, path_for_label
from tests.memfs.conftest import Memfs
from tests.memory.domain.agent_files.shared_files import SHARED, raw_document


def test_a_cloned_imported_agent_holds_the_files_blocks(memfs: Memfs, tmp_path: Path) -> None:
    path = next(p for p in SHARED if p.name == "evie.af")
    document = raw_document(path)
    imported = memfs.client.import_agent_file(agent_file=path.read_bytes())
    blocks = {b["id"]: b for b in document["blocks"]}
    for agent, raw in zip(imported.agents, document["agents"], strict=True):
        root = tmp_path / agent.id
        memfs.ok("clone", agent.id, str(root))
        projected = sorted(str(p.relative_to(root)) for p in root.rglob("*.md"))
        wanted = [blocks[i] for i in raw["block_ids"]]
        assert projected == sorted(str(path_for_label(b["label"])) for b in wanted)
        for block in wanted:
            read = parse_block_file((root / str(path_for_label(block["label"]))).read_text(encoding="utf-8"))
            assert (read.value, read.limit, read.read_only) == (
                block["value"],
                block["limit"],
                block["read_only"],
            )
            assert read.description == (block["description"] or "")
