"""Fusion studies: RRF and DBSF variants, weights and windows over SciFact and LoCoMo.

Results: bench/results/scifact_fusion.md.
"""

from pathlib import Path

LAB = Path(".data/bench/lab")
"""Where the fusion studies keep the indexes and candidate lists they share (``bench.fusion.lab``)."""
