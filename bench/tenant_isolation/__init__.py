"""A quiet tenant's latency beside one noisy tenant's floods (issue 26): ``python -m bench.tenant_isolation``.

See :mod:`bench.tenant_isolation.scenario` for what is measured and how.
"""
