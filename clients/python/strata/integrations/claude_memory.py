"""Claude's memory tool (``memory_20250818``) kept in a Strata agent's memory blocks.

:class:`StrataMemoryTool` is the Anthropic SDK's own ``BetaAbstractMemoryTool``; pass it to the SDK's
tool runner (``client.beta.messages.tool_runner(tools=[StrataMemoryTool(client, agent_id)], …)``) and
each ``/memories/…`` file Claude writes is a block of the agent (paths map to labels as the omni
``memory`` tool maps them, :mod:`strata.integrations.memory_paths`).

Reads use ``ListBlocks`` / ``GetBlock``; every change is a call of the omni ``memory`` tool through
``ExecuteTool``, so budgets, read-only blocks and label rules apply exactly as to any agent. Each file
Claude views or changes has its etag remembered, and the next change to it is conditional on that
etag: if another writer changed the block in between, the change is refused (ABORTED) and Claude
reads "changed since you last viewed it: view it again" instead of overwriting the other edit.
Every refusal is a ``ToolError``, which the runner hands to Claude as an error result.

Deleting or renaming a directory changes its blocks one by one (not atomically); the first refusal
stops it and says which blocks were already changed.
"""

from __future__ import annotations

from typing import Any

from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from strata.client import AbortedError, MemoryClient, StrataClientError
from strata.integrations import memory_paths
from strata.integrations.memory_paths import MemoryPath, PathRefused, path_of

MEMORY_TOOL = "memory"
CREATED_DESCRIPTION = "A memory file Claude keeps at {path}."
"""The description a block created by Claude's ``create`` gets (the memory tool sends none)."""


class StrataMemoryTool(BetaAbstractMemoryTool):
    """Claude's memory directory as the blocks of ``agent_id``, through ``client`` (its tenant's key)."""

    def __init__(self, client: MemoryClient, agent_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.client = client
        self.agent_id = agent_id
        self._etags: dict[str, str] = {}

    # Reading --------------------------------------------------------------------------------------

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """A block with numbered lines (``view_range`` narrows them), or a directory listing."""
        target = _parse(command.path)
        blocks = {block.label: block for block in self.client.iter_blocks(agent_id=self.agent_id)}
        block = blocks.get(target.label)
        if block is not None:
            self._etags[block.label] = block.etag
            try:
                return memory_paths.numbered(target.path, block.value, command.view_range)
            except PathRefused as refused:
                raise ToolError(str(refused)) from None
        if target.is_root or any(target.under(label) for label in blocks):
            sizes = {label: len(found.value.encode()) for label, found in blocks.items()}
            return memory_paths.listing(target, sizes)
        raise ToolError(f"The path {command.path} does not exist. Please provide a valid path.")

    # Changing -------------------------------------------------------------------------------------

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        target = self._file(command.path)
        arguments = {
            "command": "create",
            "path": target.path,
            "file_text": command.file_text,
            "description": CREATED_DESCRIPTION.format(path=target.path),
        }
        self._run(arguments, target.label, conditional=False)
        return f"File created successfully at: {target.path}"

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        target = self._file(command.path)
        arguments = {
            "command": "str_replace",
            "path": target.path,
            "old_string": command.old_str,
            "new_string": command.new_str,
        }
        return self._run(arguments, target.label)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        target = self._file(command.path)
        arguments = {
            "command": "insert",
            "path": target.path,
            "insert_text": command.insert_text,
            "insert_line": command.insert_line,
        }
        return self._run(arguments, target.label)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        target = _parse(command.path)
        if target.is_root:
            raise ToolError("Cannot delete the /memories directory itself")
        for label in self._labels_at(target, command.path):
            self._run({"command": "delete", "path": path_of(label)}, label, partial=target)
        return f"Successfully deleted {target.path}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        source, destination = _parse(command.old_path), _parse(command.new_path)
        if source.is_root or destination.is_root:
            raise ToolError("Cannot rename the /memories directory itself")
        for label in self._labels_at(source, command.old_path):
            new_label = destination.label + label[len(source.label) :]
            arguments = {"command": "rename", "old_path": path_of(label), "new_path": path_of(new_label)}
            self._run(arguments, label, new_label=new_label, partial=source)
        return f"Successfully renamed {source.path} to {destination.path}"

    def clear_all_memory(self) -> str:
        """Delete every block of the agent its tools may delete (read-only blocks stay)."""
        root = _parse(memory_paths.ROOT)
        for block in list(self.client.iter_blocks(agent_id=self.agent_id)):
            if not block.read_only:
                self._run({"command": "delete", "path": path_of(block.label)}, block.label, partial=root)
        return "All memory cleared"

    # Helpers --------------------------------------------------------------------------------------

    def _file(self, path: str) -> MemoryPath:
        target = _parse(path)
        if target.is_root:
            raise ToolError(f"{path} is the memory directory, not a file; name a file under it")
        return target

    def _labels_at(self, target: MemoryPath, path: str) -> list[str]:
        """The block ``target`` names, or every block under it as a directory."""
        labels = [block.label for block in self.client.iter_blocks(agent_id=self.agent_id)]
        if target.label in labels:
            return [target.label]
        inside = [label for label in labels if target.under(label)]
        if not inside:
            raise ToolError(f"The path {path} does not exist")
        return inside

    def _run(
        self,
        arguments: dict[str, Any],
        label: str,
        *,
        conditional: bool = True,
        new_label: str | None = None,
        partial: MemoryPath | None = None,
    ) -> str:
        """One ``memory`` tool call, conditional on the etag last seen for ``label``."""
        etag = self._etags.get(label, "") if conditional else ""
        try:
            result = self.client.execute_tool(
                agent_id=self.agent_id, tool_name=MEMORY_TOOL, arguments=arguments, etag=etag
            )
        except AbortedError as error:
            raise ToolError(
                f"{path_of(label)} changed since you last viewed it (another writer edited it); "
                f"view it again and redo your change. ({error.message}; reason: {error.reason})"
            ) from None
        except StrataClientError as error:
            raise ToolError(_refusal(error.message, error.reason, partial)) from None
        if not result.ok:
            raise ToolError(_refusal(result.text, result.reason, partial))
        self._etags.pop(label, None)
        if result.HasField("block") and arguments["command"] != "delete":
            self._etags[new_label or label] = result.block.etag
        return str(result.text)


def _parse(path: str) -> MemoryPath:
    try:
        return memory_paths.parse(path)
    except PathRefused as refused:
        raise ToolError(str(refused)) from None


def _refusal(message: str, reason: str, partial: MemoryPath | None) -> str:
    text = f"{message} (reason: {reason})" if reason else message
    if partial is not None:
        text += f" Blocks under {partial.path} before this one were already changed; view it to see."
    return text
