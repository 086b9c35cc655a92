"""OpenAI-style JSON schemas for every memory tool, written to teach the model how to call them.

Each description says what the tool is for, then shows a good call and a bad one. The parameter lists
are the contract the planner enforces: a test checks that required, optional and typed arguments agree.
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import UnknownTool

_NO_LINE_NUMBERS = (
    "Never copy the line numbers ('3→ ') or the line-number warning shown with your memory into an "
    "argument: they are for display only and such calls are refused."
)


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _params(properties: dict[str, dict[str, Any]], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


_LABEL = _string(
    "Label of the memory block to edit, exactly as it appears in your core memory (e.g. 'human')."
)

_CORE_MEMORY_APPEND = _tool(
    "core_memory_append",
    "Add a new line at the end of a core memory block. Use it to record a new fact without touching "
    "what is already there; the text is joined to the block with a newline.\n"
    "Good: core_memory_append(label='human', content='Prefers tea over coffee.')\n"
    "Bad: core_memory_append(label='human', content='4→ Prefers tea over coffee.') "
    "(copied a line number).\n" + _NO_LINE_NUMBERS,
    _params(
        {"label": _LABEL, "content": _string("Text to add as the block's new last line(s).")},
        ["label", "content"],
    ),
)

_CORE_MEMORY_REPLACE = _tool(
    "core_memory_replace",
    "Replace every occurrence of some exact text in a core memory block. Use an empty new_content to "
    "delete the text.\n"
    "Good: core_memory_replace(label='human', old_content='Lives in Lyon', new_content='Lives in Paris')\n"
    "Bad: core_memory_replace(label='human', old_content='', new_content='Lives in Paris') "
    "(old_content must name existing text; use core_memory_append to add).\n" + _NO_LINE_NUMBERS,
    _params(
        {
            "label": _LABEL,
            "old_content": _string("Existing text to replace; must match exactly, whitespace included."),
            "new_content": _string("Replacement text; empty to delete old_content."),
        },
        ["label", "old_content", "new_content"],
    ),
)

_MEMORY_REPLACE = _tool(
    "memory_replace",
    "Make a precise edit: replace one exact, unique piece of text in a memory block. old_string must "
    "appear exactly once (add surrounding words to make it unique). Do not use it to rewrite a whole "
    "block (use memory_rethink). An empty new_string deletes old_string.\n"
    "Good: memory_replace(label='human', old_string='Their name is Alice', new_string='Their name is Bob')\n"
    "Good: memory_replace(label='todos', old_string='- [ ] Book flights', new_string='- [x] Book flights')\n"
    "Bad: memory_replace(label='human', old_string='2→ Their name is Alice', new_string='2→ Their name is "
    "Bob') (line numbers are display-only).\n" + _NO_LINE_NUMBERS,
    _params(
        {
            "label": _LABEL,
            "old_string": _string("The exact text to replace, matching once (whitespace included)."),
            "new_string": _string("The text to put in its place; empty to delete."),
        },
        ["label", "old_string", "new_string"],
    ),
)

_INSERT_LINE = {
    "type": "integer",
    "description": "Insert after this line (1-based, as numbered in your memory view); 0 inserts before "
    "the first line; -1 (the default) appends at the end.",
}

_MEMORY_INSERT = _tool(
    "memory_insert",
    "Insert text as new line(s) into a memory block at a given line, leaving everything else intact.\n"
    "Good: memory_insert(label='todos', new_string='- [ ] Renew passport', insert_line=2)\n"
    "Good: memory_insert(label='human', new_string='Has a cat named Miso.') (appends at the end)\n"
    "Bad: memory_insert(label='todos', new_string='3→ - [ ] Renew passport', insert_line=2) "
    "(copied a line number).\n" + _NO_LINE_NUMBERS,
    _params(
        {
            "label": _LABEL,
            "new_string": _string("Text to insert; may span several lines."),
            "insert_line": _INSERT_LINE,
        },
        ["label", "new_string"],
    ),
)

_MEMORY_RETHINK = _tool(
    "memory_rethink",
    "Rewrite a whole memory block with new, reorganised content: for sweeping changes such as merging "
    "duplicates or restructuring, not for small edits (use memory_replace or memory_insert). new_memory "
    "replaces everything, so keep all information that is still true. Creates the block if the label "
    "does not exist yet.\n"
    "Good: memory_rethink(label='human', new_memory='Name: Bob\\nLives in Paris\\nPrefers tea.')\n"
    "Bad: memory_rethink(label='human', new_memory='Prefers tea.') (drops everything else the block "
    "held).\n" + _NO_LINE_NUMBERS,
    _params(
        {"label": _LABEL, "new_memory": _string("The block's complete new content.")},
        ["label", "new_memory"],
    ),
)

_PATH = (
    "Path of the memory block, '/memories/<label>' (e.g. '/memories/user_preferences'); "
    "nested labels keep their slashes."
)

_MEMORY = _tool(
    "memory",
    "Manage memory blocks by path ('/memories/<label>'). Commands and their arguments:\n"
    "- create: path, description (may be empty), optional file_text (initial content).\n"
    "- str_replace: path, old_string (must occur exactly once), new_string (empty deletes).\n"
    "- insert: path, insert_text, optional insert_line (after that line; 0 = top; default -1 = end).\n"
    "- delete: path. Removes the block from your memory.\n"
    "- rename: old_path and new_path to rename; or path and description to change the description.\n"
    "Good: memory(command='create', path='/memories/coding_preferences', description='How the user likes "
    "their code.', file_text='Uses type hints everywhere.')\n"
    "Good: memory(command='rename', old_path='/memories/temp', new_path='/memories/project/notes')\n"
    "Bad: memory(command='insert', path='/memories/notes', insert_text='5→ Call Ana') (copied a line "
    "number).\n" + _NO_LINE_NUMBERS,
    _params(
        {
            "command": {
                "type": "string",
                "enum": ["create", "str_replace", "insert", "delete", "rename"],
                "description": "The operation to perform.",
            },
            "path": _string(_PATH),
            "file_text": _string("create: the new block's initial content (default empty)."),
            "description": _string("create / rename: what the block is for, shown with it in your memory."),
            "old_string": _string("str_replace: the exact text to replace, matching once."),
            "new_string": _string("str_replace: the replacement text; empty to delete."),
            "insert_line": _INSERT_LINE,
            "insert_text": _string("insert: the text to insert."),
            "old_path": _string("rename: the block's current path."),
            "new_path": _string("rename: the block's new path."),
        },
        ["command"],
    ),
)

_TAGS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "Category tags, e.g. ['meetings', 'project_x'].",
}

_ARCHIVAL_MEMORY_INSERT = _tool(
    "archival_memory_insert",
    "Store a fact or summary in long-term archival memory, searchable later by meaning and by words. "
    "Write self-contained statements with their context and add tags; returns the new passage id.\n"
    "Good: archival_memory_insert(content='2026-03-15 meeting: Q2 focuses on API v2; John leads "
    "performance work.', tags=['meetings', 'roadmap'])\n"
    "Bad: archival_memory_insert(content='he said yes') (no context: unfindable and meaningless later).",
    _params({"content": _string("The text to store, self-contained."), "tags": _TAGS}, ["content"]),
)

_ARCHIVAL_MEMORY_SEARCH = _tool(
    "archival_memory_search",
    "Search archival memory (hybrid: semantic similarity plus full text). Describe what you are looking "
    "for in natural words; narrow with tags and dates.\n"
    "Good: archival_memory_search(query='decisions about the database migration', tags=['projects'])\n"
    "Bad: archival_memory_search(query='tags:projects AND migration') (the query is plain text, not a "
    "filter language; use the tags argument).",
    _params(
        {
            "query": _string("What you are looking for, in natural language."),
            "tags": _TAGS,
            "tag_match_mode": {
                "type": "string",
                "enum": ["any", "all"],
                "description": "'any' (default): passages with at least one of the tags; "
                "'all': with every tag.",
            },
            "top_k": {"type": "integer", "description": "Maximum number of results (default 5)."},
            "start_datetime": _string(
                "Only passages created at or after this time (ISO 8601: '2024-01-15' or '2024-01-15T14:30')."
            ),
            "end_datetime": _string(
                "Only passages created at or before this time (ISO 8601; a date alone covers the whole day)."
            ),
        },
        ["query"],
    ),
)

_CONVERSATION_SEARCH = _tool(
    "conversation_search",
    "Search earlier messages of your conversations with the user (hybrid: meaning plus words), "
    "optionally by role and date range (inclusive).\n"
    "Good: conversation_search(query='what the user said about their sister', roles=['user'])\n"
    "Good: conversation_search(query='deployment', start_date='2024-01-15', end_date='2024-01-15')\n"
    "Bad: conversation_search(query='messages from last week') (put dates in start_date/end_date).",
    _params(
        {
            "query": _string(
                "What to look for, in natural language. A day or month named with its year "
                "('in May 2023', 'the week before 16 May 2023') also keeps the search to messages "
                "said from then to a month after (all of them when none was said then), unless "
                "start_date or end_date is given."
            ),
            "roles": {
                "type": "array",
                "items": {"type": "string", "enum": ["assistant", "user", "tool"]},
                "description": "Only messages with these roles (default: all).",
            },
            "limit": {"type": "integer", "description": "Maximum number of results (default 5)."},
            "start_date": _string(
                "Only messages at or after this time (ISO 8601: '2024-01-15' or '2024-01-15T14:30')."
            ),
            "end_date": _string(
                "Only messages at or before this time (ISO 8601; a date alone covers the whole day)."
            ),
        },
        ["query"],
    ),
)

_SCHEMAS: dict[str, dict[str, Any]] = {
    schema["function"]["name"]: schema
    for schema in (
        _CORE_MEMORY_APPEND,
        _CORE_MEMORY_REPLACE,
        _MEMORY_REPLACE,
        _MEMORY_INSERT,
        _MEMORY_RETHINK,
        _MEMORY,
        _ARCHIVAL_MEMORY_INSERT,
        _ARCHIVAL_MEMORY_SEARCH,
        _CONVERSATION_SEARCH,
    )
}


def tool_schemas() -> list[dict[str, Any]]:
    """Every memory tool's schema, edit tools first; a fresh copy the caller may change."""
    return [copy.deepcopy(schema) for schema in _SCHEMAS.values()]


def tool_schema(name: str) -> dict[str, Any]:
    """One tool's schema (a fresh copy); an unknown name raises :class:`UnknownTool`."""
    schema = _SCHEMAS.get(name)
    if schema is None:
        raise UnknownTool(name, known=tuple(_SCHEMAS))
    return copy.deepcopy(schema)


def parameter_names(name: str) -> tuple[str, ...]:
    """The argument names a tool accepts, in schema order."""
    return tuple(_SCHEMAS[name]["function"]["parameters"]["properties"])
