"""The three-way decision for one label, over every combination of base, server and folder."""

from __future__ import annotations

import pytest

from strata.memfs.layout import BlockFile
from strata.memfs.plan import Kind, Local, Remote, classify
from strata.memfs.state import Base, Content

BASE = Base("block-1", 3, "etag-3", Content.of("d", 50, False, "v"))


def remote(value: str = "v", *, etag: str = "etag-3", read_only: bool = False, limit: int = 50) -> Remote:
    return Remote("block-1", "x", 3, etag, "d", limit, read_only, value)


def local(
    value: str = "v", *, description: str = "d", limit: int | None = 50, read_only: bool | None = None
) -> Local:
    return Local("x.md", BlockFile(description, value, limit, read_only))


@pytest.mark.parametrize(
    ("base", "server", "folder", "kind"),
    [
        (BASE, remote(), local(), Kind.UNCHANGED),
        (BASE, remote(etag="etag-4"), local(), Kind.RECORD),
        (BASE, remote("w"), local(), Kind.PULL_UPDATE),
        (BASE, None, local(), Kind.PULL_REMOVE),
        (None, remote(), None, Kind.PULL_CREATE),
        (BASE, remote(), local("w"), Kind.PUSH_UPDATE),
        (None, None, local("w"), Kind.PUSH_CREATE),
        (BASE, remote(), None, Kind.KEPT),
        (BASE, remote("w"), local("w"), Kind.RECORD),
        (BASE, None, None, Kind.FORGET),
        (None, remote("w"), local("w"), Kind.RECORD),
        (BASE, remote("w"), local("u"), Kind.MERGE),  # the engine asks the server: merge or conflict
        (BASE, remote("w"), None, Kind.CONFLICT),
        (BASE, None, local("u"), Kind.CONFLICT),
        (None, remote("w"), local("u"), Kind.CONFLICT),
        (BASE, remote(), local(limit=None, read_only=None), Kind.UNCHANGED),
        (BASE, remote(), local(read_only=True), Kind.REFUSED),
        (BASE, remote(), local("w", description=""), Kind.REFUSED),
        (None, None, local(read_only=True), Kind.REFUSED),
        (BASE, remote(), Local("x.md", error="bad"), Kind.INVALID),
    ],
)
def test_classify(base: Base | None, server: Remote | None, folder: Local | None, kind: Kind) -> None:
    assert classify("x", base, server, folder, prune=False).kind is kind


def test_a_read_only_base_refuses_every_local_edit_and_prune() -> None:
    locked = Base("block-1", 3, "etag-3", Content.of("d", 50, True, "v"))
    assert classify("x", locked, remote(read_only=True), local("w"), prune=False).kind is Kind.REFUSED
    assert classify("x", locked, remote(read_only=True), None, prune=True).kind is Kind.REFUSED
    assert classify("x", locked, remote("w", read_only=True), local(), prune=False).kind is Kind.PULL_UPDATE


def test_prune_detaches_only_an_unchanged_block() -> None:
    assert classify("x", BASE, remote(), None, prune=True).kind is Kind.DETACH
    assert classify("x", BASE, remote("w"), None, prune=True).kind is Kind.CONFLICT


def test_an_update_names_only_the_changed_fields() -> None:
    change = classify("x", BASE, remote(), local("w", limit=60), prune=False)
    assert (change.kind, change.mask) == (Kind.PUSH_UPDATE, ("value", "limit"))
    change = classify("x", BASE, remote(), local(description="new"), prune=False)
    assert change.mask == ("description",)
