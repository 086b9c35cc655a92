"""Latency, throughput and scaling benchmarks (``make bench``): see ``bench/run_all.py``."""
