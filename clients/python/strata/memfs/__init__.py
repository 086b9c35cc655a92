"""MemFS: an agent's core memory as a git-backed folder of Markdown files, synced both ways.

``layout``  which files are blocks; reading and writing a block file (front matter + value)
``state``   the sync state committed in ``.strata/memfs.json``: target, agent, per-block base
``plan``    the pure three-way comparison deciding, per label, to pull, push, refuse or report a conflict
``engine``  clone, status, pull and push against MemoryService, each ending in one commit
``git``     the git commands used (init, commit named paths, install the hook)
``hook``    the pre-commit hook that refuses read-only edits in hand-made commits
``report``  outcomes as text, JSON and commit messages

The ``strata memfs`` commands (``strata/cli/memfs.py``) are the front door.
"""

from strata.memfs.engine import MemfsError, clone, pull, push, status
from strata.memfs.layout import BlockFile, LayoutError, parse_block_file, render_block_file
from strata.memfs.report import Report
from strata.memfs.state import STATE_PATH, StateError

__all__ = [
    "STATE_PATH",
    "BlockFile",
    "LayoutError",
    "MemfsError",
    "Report",
    "StateError",
    "clone",
    "parse_block_file",
    "pull",
    "push",
    "render_block_file",
    "status",
]
