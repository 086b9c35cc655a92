"""Checks over MemoryService's SQLite store that must hold whatever requests it was sent."""

from __future__ import annotations

import sqlite3

_ORPHANS = {
    "agent_blocks without their block or agent": """
        SELECT count(*) FROM agent_blocks ab
        WHERE NOT EXISTS (SELECT 1 FROM blocks b WHERE b.id = ab.block_id)
           OR NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = ab.agent_id)""",
    "attachments whose label differs from the block's": """
        SELECT count(*) FROM agent_blocks ab JOIN blocks b ON b.id = ab.block_id WHERE ab.label != b.label""",
    "archive links without their archive or agent": """
        SELECT count(*) FROM archive_agents aa
        WHERE NOT EXISTS (SELECT 1 FROM archives r WHERE r.id = aa.archive_id)
           OR NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = aa.agent_id)""",
    "passages without their archive": """
        SELECT count(*) FROM passages p
        WHERE NOT EXISTS (SELECT 1 FROM archives r WHERE r.id = p.archive_id)""",
    "passage tags without their passage": """
        SELECT count(*) FROM passage_tags t
        WHERE NOT EXISTS (SELECT 1 FROM passages p WHERE p.id = t.passage_id)""",
    "messages without their agent": """
        SELECT count(*) FROM messages m WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = m.agent_id)""",
    "files without their agent": """
        SELECT count(*) FROM files f WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = f.agent_id)""",
    "blocks over their character limit": "SELECT count(*) FROM blocks WHERE length(value) > char_limit",
    "files over their character limit": "SELECT count(*) FROM files WHERE length(content) > char_limit",
    "blocks whose history does not end at their version": """
        SELECT count(*) FROM blocks b
        WHERE b.version != (SELECT max(v.version) FROM block_versions v WHERE v.block_id = b.id)""",
    "blocks whose history has gaps": """
        SELECT count(*) FROM blocks b
        WHERE (SELECT count(*) FROM block_versions v WHERE v.block_id = b.id) != b.version
           OR (SELECT min(v.version) FROM block_versions v WHERE v.block_id = b.id) != 1""",
    "history entries whose block is gone": """
        SELECT count(*) FROM block_versions v
        WHERE NOT EXISTS (SELECT 1 FROM blocks b WHERE b.id = v.block_id)""",
    "agents whose message_count is not their messages": """
        SELECT count(*) FROM agents a
        WHERE a.message_count != (SELECT count(*) FROM messages m WHERE m.agent_id = a.id)""",
    "archives whose passage_count is not their passages": """
        SELECT count(*) FROM archives r
        WHERE r.passage_count != (SELECT count(*) FROM passages p WHERE p.archive_id = r.id)""",
    "archive tags whose count is not their passages'": """
        SELECT
            (SELECT count(*) FROM (
                SELECT archive_id, tag, passages FROM archive_tags
                EXCEPT SELECT archive_id, tag, count(*) FROM passage_tags GROUP BY archive_id, tag))
          + (SELECT count(*) FROM (
                SELECT archive_id, tag, count(*) FROM passage_tags GROUP BY archive_id, tag
                EXCEPT SELECT archive_id, tag, passages FROM archive_tags))""",
    "rows of one tenant attached to another's agent": """
        SELECT count(*) FROM agent_blocks ab
        JOIN blocks b ON b.id = ab.block_id JOIN agents a ON a.id = ab.agent_id
        WHERE a.tenant_id != b.tenant_id""",
}


def store_problems(conn: sqlite3.Connection) -> list[str]:
    """Every broken invariant, as ``"<what>: <how many>"``; empty when the store is intact."""
    problems = []
    (integrity,) = conn.execute("PRAGMA integrity_check").fetchone()
    if integrity != "ok":
        problems.append(f"sqlite integrity_check: {integrity}")
    if broken := conn.execute("PRAGMA foreign_key_check").fetchall():
        problems.append(f"foreign keys: {broken[:5]}")
    for what, query in _ORPHANS.items():
        (count,) = conn.execute(query).fetchone()
        if count:
            problems.append(f"{what}: {count}")
    return problems
