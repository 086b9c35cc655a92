"""Benchmarks: latency, throughput and retrieval quality; results go to bench/results."""
