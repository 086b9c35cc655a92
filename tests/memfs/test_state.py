"""The sync state file (``.strata/memfs.json``): written readably, read back exactly, and a missing or
damaged one refused with a message that says what to do."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from strata.memfs.state import (
    STATE_PATH,
    Base,
    Content,
    StateError,
    SyncState,
    load_state,
    save_state,
    value_digest,
)


def state(tenant: str | None = "acme") -> SyncState:
    return SyncState(
        agent_id="agent-1",
        target="127.0.0.1:1",
        tenant=tenant,
        blocks={
            "system/human": Base("block-2", 4, "etag-4", Content.of("who", 200, True, "Bob\n")),
            "notes": Base("block-1", 1, "etag-1", Content.of("", 50, False, "é")),
        },
    )


@pytest.mark.parametrize("tenant", ["acme", None])
def test_a_saved_state_loads_back_equal(tmp_path: Path, tenant: str | None) -> None:
    save_state(tmp_path, state(tenant))
    assert load_state(tmp_path) == state(tenant)


def test_the_file_is_sorted_one_field_per_line_and_keeps_only_digests(tmp_path: Path) -> None:
    save_state(tmp_path, state())
    text = (tmp_path / STATE_PATH).read_text(encoding="utf-8")
    raw = json.loads(text)
    assert raw["format"] == 1
    assert list(raw["blocks"]) == ["notes", "system/human"]
    assert raw["blocks"]["system/human"] == {
        "block_id": "block-2",
        "version": 4,
        "etag": "etag-4",
        "content": {
            "description": "who",
            "limit": 200,
            "read_only": True,
            "value_sha256": value_digest("Bob\n"),
        },
    }
    assert "Bob" not in text  # values are never stored, only their SHA-256
    assert text.endswith("}\n")
    assert '\n  "agent_id": "agent-1",\n' in text  # indented, one field per line
    assert list(raw) == sorted(raw)


def test_the_digest_is_sha256_of_the_utf8_value() -> None:
    assert value_digest("é") == hashlib.sha256(b"\xc3\xa9").hexdigest()
    assert value_digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert Content.of("d", 1, False, "abc").value_sha256 == value_digest("abc")


def test_a_folder_without_state_is_not_a_memfs_folder(tmp_path: Path) -> None:
    with pytest.raises(StateError, match=r"is not a MemFS folder .*strata memfs clone"):
        load_state(tmp_path)


@pytest.mark.parametrize(
    "damage",
    [
        "{not json",
        json.dumps({"format": 2, "agent_id": "a", "target": "t", "tenant": None, "blocks": {}}),
        json.dumps({"format": 1, "agent_id": "a", "target": "t", "tenant": None}),
        json.dumps(
            {"format": 1, "agent_id": "a", "target": "t", "tenant": None, "blocks": {"x": {"block_id": "b"}}}
        ),
        json.dumps(
            {
                "format": 1,
                "agent_id": "a",
                "target": "t",
                "tenant": None,
                "blocks": {"x": {"block_id": "b", "version": "v", "etag": "e", "content": {}}},
            }
        ),
    ],
)
def test_a_damaged_state_is_refused_naming_the_file(tmp_path: Path, damage: str) -> None:
    (tmp_path / ".strata").mkdir()
    (tmp_path / STATE_PATH).write_text(damage, encoding="utf-8")
    with pytest.raises(StateError, match=r"memfs\.json") as refused:
        load_state(tmp_path)
    if damage.startswith("{not"):
        assert "cannot read" in str(refused.value)
    else:
        assert "is damaged" in str(refused.value)
        assert "git checkout" in str(refused.value)
