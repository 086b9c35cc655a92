"""The README's first-minutes code runs as written (issue 31 item 7): its Python blocks as scripts,
its CLI block line by line with the agent id it prints, against real servers on free ports (the
README's ``127.0.0.1:50051`` becomes the test server's address, ``STRATA_MEMORY_TARGET`` for the CLI,
as the README tells a reader whose MemoryService is elsewhere)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
STRATA = Path(sys.executable).parent / "strata"
DEFAULT_TARGET = "127.0.0.1:50051"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.MULTILINE | re.DOTALL)


PYTHON_BLOCKS = _blocks("python")


def test_the_readme_has_code_to_run() -> None:
    assert PYTHON_BLOCKS
    assert any(".venv/bin/strata agents create" in block for block in _blocks("bash"))


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda block: block.splitlines()[0])
def test_each_python_block_runs_as_a_script(block: str, memory_target: str, tmp_path: Path) -> None:
    assert DEFAULT_TARGET in block  # the README shows the default address; the test server is elsewhere
    script = tmp_path / "readme.py"
    script.write_text(block.replace(DEFAULT_TARGET, memory_target))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_the_cli_block_runs_with_the_target_from_the_environment(memory_target: str) -> None:
    (block,) = [block for block in _blocks("bash") if ".venv/bin/strata agents create" in block]
    env = os.environ | {"STRATA_MEMORY_TARGET": memory_target}
    agent_id = ""
    for line in block.splitlines():
        command = shlex.split(line.split("  #")[0])
        command = [
            str(STRATA) if word == ".venv/bin/strata" else word.replace("AGENT_ID", agent_id)
            for word in command
        ]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=False)
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        if not agent_id:
            agent_id = re.search(r"^id:\s+(\S+)", done.stdout, flags=re.MULTILINE).group(1)  # type: ignore[union-attr]
    assert "Name: Bob" in done.stdout  # the prompt shows the appended memory


def test_the_readme_says_how_the_cli_finds_a_memory_service_elsewhere() -> None:
    assert "STRATA_MEMORY_TARGET" in README
