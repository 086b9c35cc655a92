"""MemoryService storage: SQL through SQLAlchemy 2 Core (SQLite by default, PostgreSQL by URL)."""
