"""MemoryService replicas: throughput per replica and outbox delivery across processes.

Part of ``make bench`` (``bench/run_all.py``); alone: ``python -m bench.replicas.scenario``.
"""
