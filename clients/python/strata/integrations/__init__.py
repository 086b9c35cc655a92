"""Strata behind other SDKs' interfaces: :mod:`strata.integrations.claude_memory` stores Claude's
memory tool (``memory_20250818``) in an agent's blocks."""
