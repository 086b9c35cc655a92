"""gRPC serving plumbing shared by MemoryService and RetrievalService."""
