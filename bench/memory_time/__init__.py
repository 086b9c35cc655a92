"""Memory over time: merged writes, as-of reads (issue 30)."""
