"""Examples in the proto comments are real (issue 31 item 7): every tool-arguments example written
as a JSON-encoded string (``"{\\"label\\": …}"``), on the line after one naming its tool (``for
core_memory_replace:``), names a tool MemoryService serves and has the arguments that tool's JSON
schema asks for as ListTools returns it from a real server."""

from __future__ import annotations

import itertools
import json
import re

from strata.client import MemoryClient
from tests.contract.tooling import PROTO_ROOT

EXAMPLE = re.compile(r"^\s*// (?P<encoded>\"\{\\\".*?\}\")")
"""A comment line holding a tool-arguments example as the string it is sent as: ``"{\\"key\\": …}"``."""
TOOL = re.compile(r"for (?P<tool>[a-z_]+):\s*$")
"""The line before names the tool: ``…, e.g. for core_memory_replace:``."""
JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "boolean": bool,
    "array": list,
}


def _examples() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted(PROTO_ROOT.rglob("*.proto")):
        lines = path.read_text().splitlines()
        for before, line in itertools.pairwise(lines):
            if line.strip().startswith("//") and '\\"' in line:
                match, tool = EXAMPLE.match(line), TOOL.search(before)
                assert match is not None, (
                    f"{path.name}: an example that is not a whole encoded string: {line}"
                )
                assert tool is not None, f"{path.name}: the line before an example names no tool: {before}"
                found.append((path.name, tool["tool"], match["encoded"]))
    return found


def test_every_tool_arguments_example_is_valid_for_its_tool(memory_target: str) -> None:
    examples = _examples()
    assert examples, "the ExecuteToolRequest.arguments comment shows an example"
    with MemoryClient(memory_target) as client:
        schemas = {tool.name: json.loads(tool.json_schema) for tool in client.list_tools().tools}
    for file, tool, encoded in examples:
        assert tool in schemas, f"{file}: {tool} is not a tool ListTools serves"
        arguments = json.loads(json.loads(encoded))  # the comment shows the string as it is sent
        parameters = schemas[tool]["function"]["parameters"]
        assert set(parameters["required"]) <= set(arguments) <= set(parameters["properties"]), (file, tool)
        for name, value in arguments.items():
            assert isinstance(value, JSON_TYPES[parameters["properties"][name]["type"]]), (file, tool, name)
