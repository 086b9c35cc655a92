"""The pure core of MemoryService: no I/O, no gRPC, no database.

- ``model``: blocks, file blocks, directories and the agent settings enums.
- ``errors``: the typed errors every layer raises (reason + metadata, mapped to a status elsewhere).
- ``budgets``: character budgets (on write only), limit changes, label rules.
- ``render`` / ``render_git``: core memory as prompt text in the three modes, plus ``<directories>``.
- ``prompt``: ``<memory_metadata>``, timestamps and the assembled system prompt.
- ``tools``: the self-editing tools as a planner (arguments in, checked changes out), their JSON
  schemas and the result envelope.
"""
