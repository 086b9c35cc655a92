"""Suite-wide set-up: the developer's ``STRATA_*`` environment never reaches a test (tests/hermetic.py)."""

from __future__ import annotations

import os

import pytest

from tests.hermetic import scrub_environment


def pytest_configure(config: pytest.Config) -> None:
    scrub_environment(os.environ)
