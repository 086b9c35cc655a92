"""``strata memfs`` as real processes: clone with the target from the environment, then commands run
inside the folder with no target at all reach the recorded server; a different target is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from strata.cli.main import main
from tests.memfs.conftest import GIT_ENV, Memfs, block

STRATA = Path(sys.executable).parent / "strata"


def strata(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STRATA, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_console_script_clones_then_syncs_from_inside_the_folder(memfs: Memfs, tmp_path: Path) -> None:
    agent_id = memfs.agent(block("system/human", "Bob"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")} | GIT_ENV
    cloned = strata(
        "--tenant",
        memfs.tenant,
        "memfs",
        "clone",
        agent_id,
        "memory",
        cwd=tmp_path,
        env=env | {"STRATA_MEMORY_TARGET": memfs.target},
    )
    assert cloned.returncode == 0, cloned.stderr
    root = tmp_path / "memory"
    human = root / "system/human.md"
    human.write_bytes(human.read_bytes() + b"\nLikes tea")

    status = strata("--json", "memfs", "status", cwd=root, env=env)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["pending"] == [
        {
            "label": "system/human",
            "path": "system/human.md",
            "kind": "push-update",
            "detail": "edited here: value",
        }
    ]
    pushed = strata("memfs", "sync", cwd=root, env=env)
    assert pushed.returncode == 0, pushed.stderr
    assert "committed: memfs push: update system/human" in pushed.stdout
    assert memfs.block(agent_id, "system/human").value == "Bob\nLikes tea"


def test_another_target_or_tenant_is_refused(memfs: Memfs, tmp_path: Path) -> None:
    agent_id = memfs.agent(block("notes", "n"))
    memfs.ok("clone", agent_id, str(tmp_path / "memory"))
    folder = ["--dir", str(tmp_path / "memory")]
    assert main(["--target", "127.0.0.1:1", "--tenant", memfs.tenant, "memfs", "push", *folder]) == 2
    assert main(["--target", memfs.target, "--tenant", "someone-else", "memfs", "push", *folder]) == 2
    assert "syncs agent " + agent_id in memfs.capsys.readouterr().err
