"""The pure core of MemoryService: blocks, budgets, rendering, prompt assembly and memory tools (no I/O)."""
