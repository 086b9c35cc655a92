"""Which labels a sync may touch: the server's blocks and the folder's files that can be one file each.

Left out of every plan, and reported as ignored, so they are neither written, removed, pushed nor
detached:

- a server block whose label cannot be a path (``layout.path_for_label``: dot segments, ``\\``, ...);
- a server block larger than this client's bound (``MAX_BLOCK_BYTES`` of UTF-8 value by default,
  raised with ``strata memfs --max-block-bytes``): a server cannot make MemFS write any amount;
- labels whose file or folders differ from another's only by case (one file on macOS and Windows);
- a label whose path goes through a symbolic link (``strata.memfs.paths``).
"""

from __future__ import annotations

from pathlib import Path

from strata.client import MemoryClient
from strata.memfs.layout import Ignored, case_collisions, path_for_label
from strata.memfs.paths import link_on_path
from strata.memfs.plan import Remote
from strata.memory.v1 import resources_pb2 as pb

MAX_BLOCK_BYTES = 8 * 1024 * 1024
"""The largest block value (UTF-8 bytes) MemFS writes into a file unless the user raises it."""


def remote_blocks(
    client: MemoryClient, agent_id: str, *, max_block_bytes: int = MAX_BLOCK_BYTES
) -> tuple[dict[str, Remote], list[Ignored], set[str]]:
    """The agent's blocks by label, the blocks reported instead, and the labels withheld for their
    size (a withheld label must stay out of the plan: it is not "removed on the server")."""
    found: dict[str, Remote] = {}
    ignored: list[Ignored] = []
    withheld: set[str] = set()
    for block in client.iter_blocks(agent_id=agent_id):
        size = len(block.value.encode("utf-8", "surrogatepass"))
        if path_for_label(block.label) is None:
            why = (
                "holds '\\', a folder separator on Windows"
                if "\\" in block.label
                else "cannot be a file path"
            )
            ignored.append(Ignored(f"server block {block.label!r}", f"its label {why}"))
        elif size > max_block_bytes:
            withheld.add(block.label)
            ignored.append(
                Ignored(
                    f"server block {block.label!r}",
                    f"its value is {size} bytes, over this client's bound of {max_block_bytes}; "
                    "raise it with --max-block-bytes to sync it",
                )
            )
        else:
            found[block.label] = remote_of(block)
    return found, ignored, withheld


def projectable(root: Path, labels: set[str]) -> tuple[list[str], list[Ignored]]:
    """The labels a sync may touch, in order, and the others reported (case collisions, links)."""
    collisions = case_collisions(labels)
    kept: list[str] = []
    ignored: list[Ignored] = []
    for label in sorted(labels):
        path = path_for_label(label) or label
        link = None if label in collisions else link_on_path(root, path)
        if label in collisions:
            ignored.append(Ignored(path, f"collides by case with {collisions[label]}; rename one"))
        elif link is not None:
            ignored.append(Ignored(path, link))
        else:
            kept.append(label)
    return kept, ignored


def remote_of(block: pb.Block) -> Remote:
    return Remote(
        block_id=block.id,
        label=block.label,
        version=block.version,
        etag=block.etag,
        description=block.description,
        limit=block.limit,
        read_only=block.read_only,
        value=block.value,
    )
