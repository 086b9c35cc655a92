"""The Qdrant server docker-compose runs is the release the pinned qdrant-client is built for.

qdrant-client speaks the server's REST API of its own minor release (the client checks the server's
version on connect and warns when they differ by more than one minor version); the server engine
relies on features of recent servers (collection metadata, sparse vectors with the IDF modifier,
tenant-optimised payload indexes, batched queries).
"""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _minor(text: str) -> tuple[int, int]:
    found = re.search(r"(\d+)\.(\d+)\.\d+", text)
    assert found is not None, text
    return int(found.group(1)), int(found.group(2))


@pytest.mark.parametrize("name", ["docker-compose.yml", "docker-compose.cluster.yml"])
def test_compose_runs_the_qdrant_server_of_the_pinned_client(name: str) -> None:
    compose = yaml.safe_load((ROOT / name).read_text())
    image = str(compose["services"]["qdrant"]["image"])
    pinned = re.search(r"^qdrant-client==(\S+)$", (ROOT / "requirements/runtime.txt").read_text(), re.M)
    assert pinned is not None
    assert version("qdrant-client") == pinned.group(1)
    assert image.startswith("qdrant/qdrant:v")
    assert _minor(image) == _minor(pinned.group(1))
