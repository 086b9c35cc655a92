"""LoCoMo evidence recall through conversation_search (``make bench-locomo``; bench/LOCOMO.md)."""
