"""The tests' name for the one in-process server harness, :mod:`bench.servers`.

The harness lives in ``bench`` so the benchmarks can use it too (bench never imports ``tests``).
"""

from __future__ import annotations

from bench.servers import BackgroundPair, LoopThread, ServicePair

__all__ = ["BackgroundPair", "LoopThread", "ServicePair"]
