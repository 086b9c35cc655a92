"""The rule for metadata values a service logs, echoes or forwards (strata_serving.propagation.printable):
1 to the maximum printable ASCII characters without spaces. tests/system/test_hostile_metadata.py
sends the hostile ones through real servers."""

from __future__ import annotations

import pytest

from strata_serving.propagation import MAX_REQUEST_ID_LENGTH, printable


@pytest.mark.parametrize("value", ["a", "!", "~", "req-42", "x" * MAX_REQUEST_ID_LENGTH])
def test_one_to_the_maximum_printable_characters_pass(value: str) -> None:
    assert printable(value)


@pytest.mark.parametrize(
    "value",
    ["", "x" * (MAX_REQUEST_ID_LENGTH + 1), "a b", "a\r\nb", "a\x1bb", "a\x7fb", "caf\u00e9"],
    ids=["empty", "too-long", "space", "crlf", "escape", "delete", "non-ascii"],
)
def test_anything_else_is_refused(value: str) -> None:
    assert not printable(value)
