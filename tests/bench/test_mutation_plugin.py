"""The plugin ``make mutation`` loads into every pytest session (scripts/mutation.py's ORDER_PLUGIN):
a parametrized test whose ids pytest escapes keeps the same ids in every session of one process, as
mutmut's stats run, fork server and mutant runs share one (without it the second session's ids are
escaped twice and the recorded ids are "not found": pytest exit 4, mutmut's 255); and a failed
session ends with its exit code when a leftover's finalizer raises as it ends (without it
``pytest.main`` raises: mutmut's 255 again, for a mutant its tests killed).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scripts.mutation import ORDER_PLUGIN

ESCAPED_IDS = """
import pytest


@pytest.mark.parametrize("label", ["hu\\u200bman", "back\\\\slash"], ids=lambda label: label)
def test_label(label):
    assert label
"""

SESSIONS = """
import sys
import pytest

plugins = sys.argv[1:]
selected = "test_labels.py::test_label[hu\\\\u200bman]"
for _ in range(3):
    code = pytest.main(["-q", "-p", "no:cacheprovider", *plugins, selected])
    print("exit", int(code))
"""


def _exit_codes(folder: Path, *plugins: str) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-c", SESSIONS, *plugins],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    return [line for line in run.stdout.splitlines() if line.startswith("exit")]


def test_an_escaped_id_selects_its_test_in_every_session_of_one_process(tmp_path: Path) -> None:
    (tmp_path / "test_labels.py").write_text(ESCAPED_IDS)
    (tmp_path / "mutation_order.py").write_text(ORDER_PLUGIN)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    assert _exit_codes(tmp_path, "-p", "mutation_order") == ["exit 0"] * 3
    assert _exit_codes(tmp_path) == ["exit 0", "exit 4", "exit 4"]  # pytest alone: the ids drift


LEFTOVER = """
import gc


class Leftover:
    def __del__(self):
        raise RuntimeError("a connection closed too late")


def pytest_sessionfinish():
    gc.disable()  # freed by pytest's own collection as the session ends, not at a chance moment
    leftover = Leftover()
    leftover.cycle = leftover
"""

ONE_SESSION = """
import sys
import pytest

try:
    print("exit", int(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:], "test_leftover.py"])))
except BaseException as error:
    print("raised", type(error).__name__)
"""


def _session(folder: Path, passing: bool, *plugins: str) -> str:
    (folder / "conftest.py").write_text(LEFTOVER)
    (folder / "test_leftover.py").write_text(f"def test_outcome():\n    assert {passing}\n")
    run = subprocess.run(
        [sys.executable, "-c", ONE_SESSION, *plugins], cwd=folder, capture_output=True, text=True, check=False
    )
    return run.stdout.splitlines()[-1]


def test_a_leftover_reported_after_a_failed_session_leaves_its_exit_code(tmp_path: Path) -> None:
    (tmp_path / "mutation_order.py").write_text(ORDER_PLUGIN)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nfilterwarnings = error\nasyncio_default_fixture_loop_scope = function\n"
    )
    assert _session(tmp_path, False) == "raised PytestUnraisableExceptionWarning"  # pytest alone
    assert _session(tmp_path, False, "-p", "mutation_order") == "exit 1"  # killed, as mutmut reads it
    assert _session(tmp_path, True, "-p", "mutation_order") == "raised PytestUnraisableExceptionWarning"
