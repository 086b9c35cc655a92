"""Block files: the exact body rule, front matter validation, and which paths are blocks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata.memfs.layout import (
    BlockFile,
    LayoutError,
    label_for_path,
    parse_block_file,
    path_for_label,
    render_block_file,
    scan,
)

# What the server can hold: no "\r" (it stores every block text with LF line endings).
values = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r"), max_size=200) | (
    st.sampled_from(["", "\n", "\n\n", "---", "---\n", "\n---\n", "x\n---\ny"])
)


def test_a_file_with_windows_or_old_mac_line_endings_reads_as_lf_like_the_server_stores_it() -> None:
    text = '---\ndescription: "a\\r\\nb"\n---\none\r\ntwo\rthree\r\n'
    assert parse_block_file(text) == BlockFile("a\nb", "one\ntwo\nthree\n")


@given(
    description=st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r"), max_size=80),
    limit=st.integers(1, 2**31 - 1),
    read_only=st.booleans(),
    value=values,
)
def test_render_then_parse_gives_every_field_back_exactly(
    description: str, limit: int, read_only: bool, value: str
) -> None:
    text = render_block_file(description, limit, read_only, value)
    assert parse_block_file(text) == BlockFile(description, value, limit, read_only)
    assert text.endswith("---\n" + value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("---\ndescription: d\n---\n", ""),
        ("---\ndescription: d\n---", ""),
        ("---\ndescription: d\n---\n\n", "\n"),
        ("---\ndescription: d\n---\n\n\nx\n\n", "\n\nx\n\n"),
        ("---\ndescription: d\n---\n---\n", "---\n"),
        ("---\ndescription: d\n---\nno newline at end", "no newline at end"),
    ],
)
def test_the_body_starts_after_the_closing_fence_line_and_is_kept_as_is(text: str, value: str) -> None:
    assert parse_block_file(text).value == value


def test_omitted_limit_and_read_only_are_none() -> None:
    assert parse_block_file("---\ndescription: d\n---\nv") == BlockFile("d", "v", None, None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("description: d\n---\nv", "must start with a '---' line"),
        ("\n---\ndescription: d\n---\nv", "must start with a '---' line"),
        ("---\r\ndescription: d\r\n---\r\nv", "must start with a '---' line"),
        ("---\ndescription: d\nv", "not closed"),
        ("---\n---\nv", "must be a YAML mapping"),
        ("---\ndescription: [\n---\nv", "not valid YAML"),
        ("---\ndescription: d\n--- \n---\nv", "not valid YAML"),  # only an exact '---' line closes
        ("---\nlimit: 3\n---\nv", "needs 'description'"),
        ("---\ndescription: 12\n---\nv", "needs 'description'"),
        ("---\ndescription: d\nlimit: 0\n---\nv", "'limit' must be a positive integer"),
        ("---\ndescription: d\nlimit: true\n---\nv", "'limit' must be a positive integer"),
        ("---\ndescription: d\nread_only: 'yes'\n---\nv", "'read_only' must be true or false"),
        ("---\ndescription: d\nmetadata: {}\n---\nv", "unknown front matter keys ['metadata']"),
    ],
)
def test_unreadable_front_matter_is_an_error_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(LayoutError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_block_file(text)


@pytest.mark.parametrize(
    ("label", "path"),
    [
        ("system/persona", "system/persona.md"),
        ("notes/café/日本", "notes/café/日本.md"),
        ("a.md", "a.md.md"),
        ("../escape", None),
        ("system/.hidden", None),
        (".strata/memfs", None),
        ("has space", None),
        ("tag<x>", None),
        ("a//b", None),
        ("x" * 201, None),
    ],
)
def test_labels_map_to_paths_inside_the_folder_or_not_at_all(label: str, path: str | None) -> None:
    assert path_for_label(label) == path
    if path is not None:
        assert label_for_path(path) == label


def test_scan_finds_block_files_and_reports_the_rest(tmp_path: Path) -> None:
    for relative in (
        "a.md",
        "dir/b.md",
        "dir/c.txt",
        "bad name.md",
        ".git/x.md",
        ".strata/memfs.json",
        ".env",
    ):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("x")
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    found, ignored = scan(tmp_path)
    assert sorted(found) == ["a", "dir/b"]
    assert [(i.path, i.reason.split(":")[0]) for i in ignored] == [
        ("bad name.md", "its name cannot be a block label"),
        ("link.md", "symbolic links are not followed"),
        ("dir/c.txt", "not a .md file"),
    ]


@pytest.mark.parametrize(
    "name",
    [
        "hu\u200bman",  # zero-width space
        "notes\u202e",  # right-to-left override
        "hum\u0430n",  # a Cyrillic a among Latin letters
        "\uff48\uff55\uff4d\uff41\uff4e",  # fullwidth: not NFKC
        "e\u0301",  # decomposed: not NFKC
        "x\u3164",  # Hangul filler
    ],
    ids=lambda name: name.encode("unicode_escape").decode(),
)
def test_files_named_as_the_server_would_refuse_are_reported_not_pushed(tmp_path: Path, name: str) -> None:
    """The server refuses these labels (invisible, bidi-control, non-NFKC, mixed-script look-alikes),
    so a file named so is listed as ignored with the reason instead of failing a push."""
    (tmp_path / f"{name}.md").write_text("---\ndescription: d\n---\nv")
    (tmp_path / "заметки.md").write_text("---\ndescription: d\n---\nv")  # one script: fine
    found, ignored = scan(tmp_path)
    assert sorted(found) == ["заметки"]
    assert [i.reason.split(":")[0] for i in ignored] == ["its name cannot be a block label"]


def test_front_matter_keeps_non_ascii_text_readable() -> None:
    text = render_block_file("café notes", 5, False, "v")
    assert "description: café notes\n" in text
