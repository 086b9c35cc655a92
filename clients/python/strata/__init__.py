"""Strata client: generated stubs (strata.memory.v1, strata.retrieval.v1), a typed client and the CLI."""
