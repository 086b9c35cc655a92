"""The installed ``strata`` console script as a real process: exit codes, JSON output, env target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

STRATA = Path(sys.executable).parent / "strata"


def test_console_script_exit_codes_and_json(memory_target: str, tenant: str) -> None:
    env = {**os.environ, "STRATA_MEMORY_TARGET": memory_target}
    created = subprocess.run(
        [STRATA, "--tenant", tenant, "--json", "agents", "create", "--name", "proc"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert created.returncode == 0, created.stderr
    agent = json.loads(created.stdout)
    assert (agent["name"], agent["tenant_id"], agent["block_labels"]) == (
        "proc",
        tenant,
        ["persona", "human"],
    )

    missing = subprocess.run(
        [STRATA, "--tenant", tenant, "blocks", "get", "--agent", agent["id"], "--label", "nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert (missing.returncode, missing.stdout) == (1, "")
    # Line-wise: gRPC's C core may log to the same stderr under load.
    reports = [line for line in missing.stderr.splitlines() if line.startswith("strata: ")]
    assert len(reports) == 1
    assert reports[0].startswith("strata: NOT_FOUND: ")
    assert reports[0].endswith("(reason: BLOCK_NOT_FOUND)")

    invalid = subprocess.run(
        [STRATA, "--tenant", tenant, "agents", "list", "--bogus"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert invalid.returncode == 2
    assert "unrecognized arguments: --bogus" in invalid.stderr
