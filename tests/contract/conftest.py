"""Real servers for the contract tests: the client tests' session fixtures (in-process, port 0)."""

from tests.client.conftest import memory_target, retrieval_target, server_loop, shared_pair  # noqa: F401  (fixtures)
