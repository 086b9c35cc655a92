"""Claude's /memories paths as labels, and the view texts: pure, no server."""

from __future__ import annotations

import pytest

from strata.integrations.memory_paths import PathRefused, format_size, listing, numbered, parse


@pytest.mark.parametrize(
    ("path", "label"),
    [
        ("/memories", ""),
        ("/memories/", ""),
        ("/memories/human", "human"),
        ("/memories/project/notes", "project/notes"),
        ("/memories/project/notes/", "project/notes"),
    ],
)
def test_a_path_names_the_label_the_omni_memory_tool_maps_it_to(path: str, label: str) -> None:
    assert parse(path).label == label


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "memories/human",
        "/memoriesX/human",
        "/memories/../etc/passwd",
        "/memories/a/../../b",
        "/memories/./human",
        "/memories//human",
        "/memories/a\\..\\b",
        "",
    ],
)
def test_a_path_outside_memories_is_refused(path: str) -> None:
    with pytest.raises(PathRefused, match="/memories"):
        parse(path)


def test_a_listing_shows_files_and_directories_two_levels_deep_with_sizes() -> None:
    sizes = {"human": 10, "persona": 2048, "project/notes": 5, "project/deep/er/still": 7}
    text = listing(parse("/memories"), sizes)
    header, *lines = text.split("\n")
    assert header.startswith("Here're the files and directories up to 2 levels deep in /memories")
    assert lines == [
        "2.0K\t/memories",
        "10B\t/memories/human",
        "2K\t/memories/persona",
        "12B\t/memories/project/",
        "7B\t/memories/project/deep/",
        "5B\t/memories/project/notes",
    ]


def test_a_listing_of_a_directory_holds_only_the_blocks_under_it() -> None:
    text = listing(parse("/memories/project"), {"human": 1, "project/notes": 3, "projection": 9})
    assert text.split("\n")[1:] == ["3B\t/memories/project", "3B\t/memories/project/notes"]


def test_sizes_read_as_the_memory_tool_shows_them() -> None:
    assert [format_size(n) for n in (0, 512, 1536, 1024 * 1024 * 3)] == ["0B", "512B", "1.5K", "3M"]


def test_a_block_is_shown_with_line_numbers_and_view_range_narrows_it() -> None:
    value = "one\ntwo\nthree\nfour"
    assert numbered("/memories/x", value, None).split("\n") == [
        "Here's the content of /memories/x with line numbers:",
        "     1\tone",
        "     2\ttwo",
        "     3\tthree",
        "     4\tfour",
    ]
    assert numbered("/memories/x", value, [2, 3]).split("\n")[1:] == ["     2\ttwo", "     3\tthree"]
    assert numbered("/memories/x", value, [3, -1]).split("\n")[1:] == ["     3\tthree", "     4\tfour"]


@pytest.mark.parametrize("view_range", [[5, 6], [3, 2], [1]])
def test_a_view_range_outside_the_block_is_refused(view_range: list[int]) -> None:
    with pytest.raises(PathRefused, match="view_range"):
        numbered("/memories/x", "a\nb", view_range)
