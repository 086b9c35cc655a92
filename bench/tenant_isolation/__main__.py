"""``python -m bench.tenant_isolation`` (see :mod:`bench.tenant_isolation.run`)."""

from bench.tenant_isolation.run import main

main()
