"""MemoryService's operations called directly (no gRPC) over a real, migrated SQLite store.

The schema is migrated once into a template file; each test gets its own copy, so tests
are independent and cheap (mutation testing runs these per mutant). The clock is fixed, so stored
prompts are exact. The outbox worker is stood in for by ``RecordingQueue``, which records wake-ups and
answers ``wait_delivered`` from the store's job table, as the worker does.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from strata_memory.domain.model import RecompilePolicy, RenderMode, ToolResultStyle
from strata_memory.operations.agents import Agents
from strata_memory.operations.archival import Archives
from strata_memory.operations.blocks import Blocks
from strata_memory.operations.files import Files
from strata_memory.operations.messages import Messages
from strata_memory.operations.prompts import Prompts
from strata_memory.operations.tools import ToolRunner
from strata_memory.store import index_jobs
from strata_memory.store.database import MIGRATIONS, Database
from strata_memory.store.records import AgentRecord, MessageRecord, ToolCallRecord

NOW = datetime(2026, 8, 1, 18, 24, 28, tzinfo=UTC)
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
"""The tail of every id the service makes (``<kind>-<uuid4>``)."""
TENANT = "tenant-a"
OTHER_TENANT = "tenant-b"


def clock() -> datetime:
    return NOW


@dataclass
class RecordingQueue:
    """The outbox as writers see it: wake-ups counted; delivery read from the job table."""

    db: Database
    notified: int = 0
    waited: list[tuple[list[int], float | None]] = field(default_factory=list)

    def notify(self) -> None:
        self.notified += 1

    async def wait_delivered(self, job_ids: Sequence[int], within: float | None) -> bool:
        self.waited.append((list(job_ids), within))
        ids = list(job_ids)
        return not await self.db.read(lambda conn: index_jobs.pending(conn, ids))


@dataclass
class Ops:
    db: Database
    queue: RecordingQueue
    prompts: Prompts
    agents: Agents
    blocks: Blocks
    archives: Archives
    messages: Messages
    files: Files
    tools: ToolRunner


@pytest.fixture(scope="session")
def migrated_template() -> Path:
    """A store migrated to the newest revision, kept in the temp dir under a digest of the migrations
    (a new migration makes a new template; sessions share it, since mutation testing starts many)."""
    digest = hashlib.sha256()
    for migration in sorted(MIGRATIONS.rglob("*.py")):
        digest.update(migration.name.encode() + b"\0" + migration.read_bytes())
    path = Path(tempfile.gettempdir()) / f"strata-operations-store-{digest.hexdigest()[:16]}.db"
    if not path.exists():
        building = path.with_suffix(f".{os.getpid()}.building")
        database = Database(f"sqlite:///{building}")
        try:
            database.migrate()
        finally:
            database.close()
        building.replace(path)  # atomic: a concurrent session sees a whole file or none
    return path


@pytest.fixture
def db(migrated_template: Path, tmp_path: Path) -> Iterator[Database]:
    path = tmp_path / "store.db"
    shutil.copyfile(migrated_template, path)
    database = Database(f"sqlite:///{path}", max_workers=2)
    yield database
    database.close()


@pytest.fixture
def ops(db: Database) -> Ops:
    queue = RecordingQueue(db)
    prompts = Prompts(db, clock)
    return Ops(
        db=db,
        queue=queue,
        prompts=prompts,
        agents=Agents(db, prompts),
        blocks=Blocks(db, prompts),
        archives=Archives(db, prompts, queue),
        messages=Messages(db, queue),
        files=Files(db, prompts),
        tools=ToolRunner(db, prompts, clock),
    )


def message_record(
    role: str = "user",
    content: str = "hello",
    tool_calls: tuple[ToolCallRecord, ...] = (),
    created_us: int = 0,
) -> MessageRecord:
    """A message as an AppendMessages request describes it (ids and conversation are the store's)."""
    return MessageRecord(
        id="",
        tenant_id="",
        agent_id="",
        conversation_id="",
        role=role,
        content=content,
        tool_calls=tool_calls,
        created_us=created_us,
    )


def agent_record(
    *,
    tenant_id: str = TENANT,
    name: str = "Sam",
    system: str = "You are Sam.\n{CORE_MEMORY}",
    policy: RecompilePolicy = RecompilePolicy.ON_EDIT,
    render_mode: RenderMode = RenderMode.STANDARD,
    timezone: str = "UTC",
    style: ToolResultStyle = ToolResultStyle.FULL_VALUE,
) -> AgentRecord:
    """An agent as a CreateAgent request describes it (id, version and times are the store's)."""
    return AgentRecord(
        id="",
        tenant_id=tenant_id,
        name=name,
        system=system,
        render_mode=render_mode,
        recompile_policy=policy,
        timezone=timezone,
        tool_result_style=style,
        version=0,
        created_us=0,
        updated_us=0,
    )
