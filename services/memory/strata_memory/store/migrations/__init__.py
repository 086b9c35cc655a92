"""Alembic migrations of MemoryService's schema, applied at start-up (``Database.migrate``)."""
