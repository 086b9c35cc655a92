"""SciFact retrieval quality (nDCG@10, Recall@100) per mode and engine (``make bench-quality``)."""
