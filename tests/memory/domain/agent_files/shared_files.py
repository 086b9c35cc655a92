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


def encoded(document: Any) -> bytes:
    return json.dumps(document).encode()
