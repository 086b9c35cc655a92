"""Property: random edits on both sides, interleaved with pulls, pushes and syncs, never lose an edit.

Every edit writes a value no other edit writes. An edit is *live* until a later edit on the same
side replaces it (whoever made that edit saw the value it replaced), or the user settles a
conflict for the other side's version with ``strata memfs resolve``. The property: after every
step, each live value is still in the folder or on the server. And after a final sync, a label's
two sides differ only when both hold live edits, i.e. a true conflict; a one-sided edit was
carried over (so a sync that does nothing fails too).
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata.memfs.layout import parse_block_file
from tests.memfs.conftest import Memfs, block

LABELS = ("system/persona", "notes/ünï", "extra")
"""``extra`` exists on neither side at first: its first edit on either side creates it."""
texts = st.text(st.sampled_from(["a", "é", "🧠", "\n", " ", "-"]), max_size=6)
steps = st.one_of(
    st.tuples(st.just("server"), st.sampled_from(LABELS), texts),
    st.tuples(st.just("local"), st.sampled_from(LABELS), texts),
    st.tuples(st.sampled_from(["keep-mine", "take-theirs"]), st.sampled_from(LABELS), st.just("")),
    st.tuples(st.sampled_from(["pull", "push", "sync"]), st.just(""), st.just("")),
)


@dataclass
class World:
    memfs: Memfs
    agent_id: str
    root: Path
    live: dict[str, set[str | None]] = field(default_factory=dict)
    serial: itertools.count[int] = field(default_factory=itertools.count)

    def file_value(self, label: str) -> str | None:
        path = self.root / f"{label}.md"
        return parse_block_file(path.read_bytes().decode()).value if path.exists() else None

    def server_value(self, label: str) -> str | None:
        blocks = self.memfs.client.iter_blocks(agent_id=self.agent_id)
        return next((b.value for b in blocks if b.label == label), None)

    def write_file(self, label: str, value: str) -> None:
        """A plain file edit: keep everything up to the closing fence, replace the body."""
        path = self.root / f"{label}.md"
        if not path.exists():
            path.write_bytes(f"---\ndescription: made here\n---\n{value}".encode())
            return
        text = path.read_bytes().decode()
        path.write_bytes((text[: text.index("\n---\n", 3) + 5] + value).encode())

    def write_server(self, label: str, value: str) -> None:
        if self.server_value(label) is None:
            self.memfs.client.create_block(block=block(label, value), agent_id=self.agent_id)
        else:
            self.memfs.set_value(self.agent_id, label, value)

    def step(self, kind: str, label: str, text: str) -> None:
        if kind == "server":
            value = f"s{next(self.serial)}:{text}"
            self.live[label].discard(self.server_value(label))
            self.write_server(label, value)
            self.live[label].add(value)
        elif kind == "local":
            value = f"l{next(self.serial)}:{text}"
            self.live[label].discard(self.file_value(label))
            self.write_file(label, value)
            self.live[label].add(value)
        elif kind in {"keep-mine", "take-theirs"}:
            self.resolve(label, theirs=kind == "take-theirs")
        else:
            self.sync(kind)

    def sync(self, command: str) -> None:
        code, out, err = self.memfs(command, "--dir", str(self.root))
        assert code == 0 or "conflict:" in out, f"{command}: {code}\n{out}\n{err}"
        assert "refused" not in out
        assert "invalid" not in out

    def resolve(self, label: str, *, theirs: bool) -> None:
        """Settle a conflict: the version not chosen is superseded by the user who saw both."""
        mine, server = self.file_value(label), self.server_value(label)
        side = ["--theirs"] if theirs else []
        code, out, _ = self.memfs("resolve", "--dir", str(self.root), *side, f"{label}.md")
        if code != 0:
            assert "is not in conflict" in out
            return
        self.live[label].discard(mine if theirs else server)
        assert self.file_value(label) == (server if theirs else mine)

    def check_nothing_lost(self) -> None:
        for label, values in self.live.items():
            sides = {self.file_value(label), self.server_value(label)}
            assert values <= sides, f"{label}: lost {values - sides}; sides hold {sides}"


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=st.lists(steps, min_size=1, max_size=10))
def test_random_edits_on_both_sides_never_lose_an_edit(
    memfs: Memfs, script: list[tuple[str, str, str]]
) -> None:
    agent_id = memfs.agent(*(block(label, f"{label}-0") for label in LABELS[:2]))
    root = Path(tempfile.mkdtemp(prefix="memfs-property-")) / "memory"
    try:
        memfs.ok("clone", agent_id, str(root))
        world = World(memfs, agent_id, root, live={label: {f"{label}-0"} for label in LABELS[:2]})
        world.live["extra"] = set()
        for kind, label, text in script:
            world.step(kind, label, text)
            world.check_nothing_lost()
        world.sync("sync")
        world.check_nothing_lost()
        for label in LABELS:
            mine, theirs = world.file_value(label), world.server_value(label)
            assert mine == theirs or {mine, theirs} <= world.live[label], (label, mine, theirs, world.live)
    finally:
        shutil.rmtree(root.parent)
