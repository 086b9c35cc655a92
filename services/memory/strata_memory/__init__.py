"""MemoryService: core memory blocks, rendering, self-editing tools and the source of truth."""
