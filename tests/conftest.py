"""Suite-wide set-up: the developer's ``STRATA_*`` environment never reaches a test (tests/hermetic.py),
and Hypothesis times no example (its default 200 ms deadline is a timed assertion: on a loaded machine,
or a mutation run at nice 19, it failed correct code; a test that sets its own deadline keeps it)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from tests.hermetic import scrub_environment

settings.register_profile("strata", deadline=None)
settings.load_profile("strata")


def pytest_configure(config: pytest.Config) -> None:
    scrub_environment(os.environ)
