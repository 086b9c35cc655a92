"""A server cannot make MemFS write any amount (``strata/memfs/projection.py``): a block whose value is
over the client's bound (``MAX_BLOCK_BYTES``, raised with ``--max-block-bytes``) is reported and
left alone on both sides: not written, and not taken for a block removed on the server."""

from __future__ import annotations

from pathlib import Path

from strata.memfs.projection import MAX_BLOCK_BYTES
from tests.memfs.conftest import Memfs, block


def test_a_block_over_the_bound_is_reported_not_written_until_the_user_raises_it(
    memfs: Memfs, tmp_path: Path
) -> None:
    agent_id = memfs.agent(block("notes", "n\n"), block("big", "x" * 5000))
    root = tmp_path / "memory"

    out = memfs.ok("clone", agent_id, str(root), "--max-block-bytes", "4096")

    assert not (root / "big.md").exists()
    assert (
        "? server block 'big'  (its value is 5000 bytes, over this client's bound of 4096; "
        "raise it with --max-block-bytes to sync it)" in out
    )
    memfs.ok("pull", "--dir", str(root), "--max-block-bytes", "5000")
    assert (root / "big.md").read_text().endswith("x" * 5000)
    # It grows on the server past the bound: the file stays as synced, the block is not detached.
    memfs.set_value(agent_id, "big", "y" * 6000)
    for command in (["pull"], ["push", "--prune"], ["status"]):
        code, out, _ = memfs(*command, "--dir", str(root), "--max-block-bytes", "5000")
        assert code == 0, out
        assert "its value is 6000 bytes" in out
    assert (root / "big.md").read_text().endswith("x" * 5000)
    assert memfs.block(agent_id, "big").value == "y" * 6000
    assert MAX_BLOCK_BYTES == 8 * 1024 * 1024
