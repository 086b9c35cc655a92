"""Memory over time: merged writes, as-of reads, purges (issue 30)."""
