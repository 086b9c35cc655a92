"""The seven real Letta Agent Files (tests/data/agentfile: copied byte for byte from
``../shared/data/agentfile``, Apache-2.0, LICENSE beside them) and how tests read them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[4]
DATA = ROOT / "tests" / "data" / "agentfile"
SHARED = sorted(DATA.glob("*.af"))
"""Every shared .af file."""
assert len(SHARED) == 7, f"expected the seven shared .af files in {DATA}"


def raw_document(path: Path) -> dict[str, Any]:
    """The file's document as the test reads it, independently of the importer (double-encoded
    files are a JSON string holding the document)."""
    document = json.loads(path.read_bytes())
    if isinstance(document, str):
        document = json.loads(document)
    assert isinstance(document, dict)
    return document


def file_bytes(path: Path) -> bytes:
    return path.read_bytes()


def encoded(document: Any) -> bytes:
    return json.dumps(document).encode()


def with_files(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with a source holding two files, both attached to its first agent (one closed),
    in the form Letta exports them (``sources``, ``files``, the agent's ``files_agents``)."""
    document["sources"] = [
        {"id": "source-0", "name": "handbook", "description": "Team handbook", "metadata": None}
    ]
    document["files"] = [
        {
            "id": "file-0",
            "source_id": "source-0",
            "file_name": "onboarding.md",
            "content": "# Onboarding\nWelcome.",
        },
        {
            "id": "file-1",
            "source_id": "source-0",
            "file_name": "holidays.md",
            "content": "Office closed 24-26 Dec.",
        },
    ]
    agent = document["agents"][0]
    agent["source_ids"] = ["source-0"]
    agent["files_agents"] = [
        {
            "id": f"file_agent-{i}",
            "agent_id": agent["id"],
            "file_id": f"file-{i}",
            "source_id": "source-0",
            "file_name": name,
            "is_open": i == 0,
            "visible_content": None,
            "last_accessed_at": None,
        }
        for i, name in enumerate(("onboarding.md", "holidays.md"))
    ]
    return document
