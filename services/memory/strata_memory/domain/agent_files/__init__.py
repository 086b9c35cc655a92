"""Letta Agent Files (``.af``) and Strata, mapped both ways by pure functions.

``reading`` turns a file's bytes into a checked JSON document, ``mapping`` turns that document into
an :class:`ImportPlan` (what to create, what to keep verbatim, what to report), and ``writing`` turns
Strata's state plus what was kept back into a document. docs/agent-files.md has the mapping table.
"""

from .files import PlannedFile
from .mapping import (
    ImportPlan,
    PlannedAgent,
    PlannedBlock,
    PlannedMessage,
    PlannedToolCall,
    Report,
    plan_import,
)
from .messages import ExportedMessage
from .reading import MAX_DEPTH, read_document
from .writing import ExportedAgent, ExportedBlock, write_document

__all__ = [
    "MAX_DEPTH",
    "ExportedAgent",
    "ExportedBlock",
    "ExportedMessage",
    "ImportPlan",
    "PlannedAgent",
    "PlannedBlock",
    "PlannedFile",
    "PlannedMessage",
    "PlannedToolCall",
    "Report",
    "plan_import",
    "read_document",
    "write_document",
]
