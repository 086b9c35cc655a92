"""The render cases the golden files hold, by name: each returns the text its file must equal.

Shared by ``test_render_golden`` (the tests) and ``golden_diff`` (prints a case's diff).
"""

from __future__ import annotations

from collections.abc import Callable

from strata_memory.domain.model import Block, Directory, FileBlock, RenderMode
from strata_memory.domain.render import compile_memory, render_blocks, render_directories

STANDARD = RenderMode.STANDARD
NUMBERED = RenderMode.LINE_NUMBERED
GIT = RenderMode.GIT

HUMAN = Block("human", "Name: Bob\nLikes tea", limit=5000, description="About the user")
UNICODE = Block(
    "\u65e5\u8a18",
    "Caf\u00e9 \U0001f642\n\u4f60\u597d\uff0c\u4e16\u754c\ne\u0301",
    limit=100,
    description="\u00dcn\u00efcode \u2713",
)
SEVERAL = [
    Block("persona", "I am Sam.\nI like clear answers.", limit=20_000, description="The agent's persona"),
    Block("human", "Name: Bob", limit=20_000, description="About the user"),
    Block("policies", "Be kind.", read_only=True),
]
REFERENCE_GIT = [
    Block("system/persona", "I am Sam"),
    Block("system/human", "Bob", description="User info"),
    Block("system/project/notes", "n1"),
    Block("reference/api", "x"),
]
NESTED_GIT = [
    Block("system/project/notes", "n1\nn2\n"),
    Block("system/human", "Bob\n", description="  User info \n", read_only=True, limit=10),
    Block("system/project", "Project X", description="Current project"),
    Block("skills/deploy", "steps", description="How to deploy"),
    Block("system/persona", "I am Sam\n\n"),
    Block("archive/2026/jan", "january"),
    Block("archive/readme", "read me"),
    Block("todo", "- [ ] x"),
    Block("system/empty", ""),
]
DOCS = [
    Directory(
        "docs",
        description="Project documents",
        instructions="Cite the file name.",
        files=(
            FileBlock("docs/guide.md", "Step 1\nStep 2", description="User guide"),
            FileBlock("docs/faq.md", "Q: x", is_open=False),
        ),
    ),
    Directory("empty"),
]


def _notes(is_open: bool) -> list[Directory]:
    return [Directory("notes", files=(FileBlock("notes/a.txt", "a", limit=100, is_open=is_open),))]


CASES: dict[str, Callable[[], str]] = {
    "standard_empty": lambda: render_blocks([], STANDARD),
    "standard_one_block": lambda: render_blocks([HUMAN], STANDARD),
    "standard_several": lambda: render_blocks(SEVERAL, STANDARD),
    "standard_read_only": lambda: render_blocks(
        [Block("rules", "No spoilers.", limit=500, description="House rules", read_only=True)], STANDARD
    ),
    "standard_missing_description": lambda: render_blocks([Block("scratch", "todo", limit=100)], STANDARD),
    "standard_empty_value": lambda: render_blocks(
        [Block("human", "", limit=20_000, description="About the user")], STANDARD
    ),
    "standard_over_limit": lambda: render_blocks(
        [Block("notes", "hello world", limit=5, description="Loaded from an old export")], STANDARD
    ),
    "standard_unicode": lambda: render_blocks([UNICODE], STANDARD),
    "line_numbered_empty": lambda: render_blocks([], NUMBERED),
    "line_numbered_one_block": lambda: render_blocks([HUMAN], NUMBERED),
    "line_numbered_several": lambda: render_blocks(
        [HUMAN, Block("rules", "", limit=100, read_only=True)], NUMBERED
    ),
    "line_numbered_unicode_tabs": lambda: render_blocks(
        [
            Block(
                "journal",
                "\tindented\n\n\U0001f642 end\n",
                limit=1000,
                description="Tabs, blank lines, emoji",
            )
        ],
        NUMBERED,
    ),
    "git_empty": lambda: render_blocks([], GIT),
    "git_only_external": lambda: render_blocks([HUMAN, Block("reference/api", "x")], GIT),
    "git_reference_example": lambda: render_blocks(REFERENCE_GIT, GIT),
    "git_nested": lambda: render_blocks(NESTED_GIT, GIT),
    "git_persona_only": lambda: render_blocks([Block("system/persona", "I am Sam")], GIT),
    "git_no_persona": lambda: render_blocks([Block("system/human", "Name: Bob")], GIT),
    "directories_none": lambda: render_directories([], max_files_open=5),
    "directories_open_closed": lambda: render_directories(DOCS, max_files_open=5),
    "compile_standard_with_directory": lambda: compile_memory([HUMAN], _notes(True), STANDARD),
    "compile_git_with_directory": lambda: compile_memory(
        [Block("system/persona", "I am Sam"), HUMAN], _notes(False), GIT
    ),
}
