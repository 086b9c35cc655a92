"""Keeping RetrievalService in step with the store: documents, the outbox worker, reindexing."""
