"""RetrievalService: embeddings, vector and full-text indexes, hybrid search."""
