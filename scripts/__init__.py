"""Developer scripts (service launcher, matrix printers)."""
