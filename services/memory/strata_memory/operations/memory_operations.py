"""The operations MemoryService's handlers delegate to, gathered in one value.

``main`` builds one ``MemoryOperations`` at start-up and hands it to both handler classes
(:mod:`strata_memory.servicer` and the archival handlers it mixes in), so neither servicer module
defines what the other needs: the servicers depend on operations, never on each other's types.
"""

from __future__ import annotations

from dataclasses import dataclass

from strata_memory.indexing.reindex import Reindexer
from strata_memory.operations.agent_files import AgentFiles
from strata_memory.operations.agents import Agents
from strata_memory.operations.archival import Archives, IndexQueue
from strata_memory.operations.blocks import Blocks
from strata_memory.operations.files import Files
from strata_memory.operations.messages import Messages
from strata_memory.operations.prompts import Prompts
from strata_memory.operations.purge import Purger
from strata_memory.operations.search import Search
from strata_memory.operations.tools import ToolRunner


@dataclass(frozen=True, slots=True)
class MemoryOperations:
    """Everything the servicer delegates to, built once in ``main``."""

    agents: Agents
    blocks: Blocks
    files: Files
    messages: Messages
    prompts: Prompts
    tools: ToolRunner
    archives: Archives
    search: Search
    reindexer: Reindexer
    index_queue: IndexQueue
    agent_files: AgentFiles
    purger: Purger
