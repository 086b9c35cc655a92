"""The console's pages, one module per view; each handler calls MemoryService through strata.client."""
