"""What MemoryService does, one module per resource: validate, run the pure core, write the store."""
