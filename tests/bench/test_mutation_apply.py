"""``scripts.mutation_apply`` applies a mutant's diff as ``mutmut show`` prints it to the package's file."""

from __future__ import annotations

import subprocess
from pathlib import Path

from scripts.mutation_apply import in_file

SOURCE = """class Blocks:
    def detach(self, conn):
        record = get_block(conn, for_update=True)
        return record


def loose(conn):
    conn.begin()
    conn.check()
    return get_block(conn, for_update=True)


def last(conn):
    return conn
"""

# mutmut shows a method dedented to the left margin, its line numbers counted from the function
METHOD_DIFF = """--- pkg/blocks.py
+++ pkg/blocks.py
@@ -1,3 +1,3 @@
 def detach(self, conn):
-    record = get_block(conn, for_update=True)
+    record = get_block(conn, )
     return record
"""
FUNCTION_DIFF = """--- pkg/blocks.py
+++ pkg/blocks.py
@@ -1,4 +1,4 @@
 def loose(conn):
     conn.begin()
     conn.check()
-    return get_block(conn, for_update=True)
+    return get_block(conn, for_update=False)
"""


def _patched(tmp_path: Path, diff: str) -> str:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "blocks.py").write_text(SOURCE)
    subprocess.run(
        ["patch", "-p0", "--batch", "--silent", "-d", str(tmp_path)], input=diff, text=True, check=True
    )
    return (tmp_path / "pkg" / "blocks.py").read_text()


def test_a_methods_diff_is_indented_back_into_its_class(tmp_path: Path) -> None:
    patched = _patched(tmp_path, in_file(METHOD_DIFF, "pkg.blocks.xǁBlocksǁdetach__mutmut_17"))
    assert patched == SOURCE.replace(
        "        record = get_block(conn, for_update=True)", "        record = get_block(conn, )"
    )


def test_a_change_in_a_functions_last_line_is_not_taken_for_the_end_of_the_file(tmp_path: Path) -> None:
    # three lines of context before the change and none after: patch alone looks for it at the end
    patched = _patched(tmp_path, in_file(FUNCTION_DIFF, "pkg.blocks.x_loose__mutmut_3"))
    assert patched == SOURCE.replace(
        "    return get_block(conn, for_update=True)", "    return get_block(conn, for_update=False)"
    )
