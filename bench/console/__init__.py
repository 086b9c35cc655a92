"""Benchmarks of the web console (``strata console``)."""
