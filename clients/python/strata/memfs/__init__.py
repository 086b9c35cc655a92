"""MemFS: an agent's core memory as a git-backed folder of Markdown files, synced both ways.

``layout``  which files are blocks; reading and writing a block file (front matter + value)
``state``   the sync state committed in ``.strata/memfs.json``: target, agent, per-block base
``plan``    the pure three-way comparison deciding, per label, to pull, push, refuse or report a conflict
``engine``  clone, status, pull and push against MemoryService, each ending in one commit
``git``     the git commands used (init, commit named paths, install the hook)
``hook``    the pre-commit hook that refuses read-only edits in hand-made commits
``report``  outcomes as text, JSON and commit messages

The ``strata memfs`` commands (``strata/cli/memfs.py``) are the front door.

Nothing is imported here, so the pre-commit hook (``python -m strata.memfs.hook``) starts without
loading gRPC.
"""
