"""Examples in the proto comments are real (issue 31 item 7): every tool-arguments example written
as a JSON-encoded string (``"{\\"label\\": …}"``) names a tool MemoryService serves and validates
against that tool's JSON schema as ListTools returns it from a real server."""

from __future__ import annotations

import json
import re

import jsonschema

from strata.client import MemoryClient
from tests.contract.tooling import PROTO_ROOT

EXAMPLE = re.compile(r"(?P<tool>[a-z_]+)[^\"\n]*?: (?P<encoded>\"\{\\\".*?\}\")")
"""``tool_name …: "{\\"key\\": …}"`` inside a comment line."""


def _examples() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted(PROTO_ROOT.rglob("*.proto")):
        for line in path.read_text().splitlines():
            comment = line.strip()
            if comment.startswith("//") and '\\"' in comment:
                match = EXAMPLE.search(comment)
                assert match is not None, f"{path.name}: an encoded example that names no tool: {comment}"
                found.append((path.name, match["tool"], match["encoded"]))
    return found


def test_every_tool_arguments_example_is_valid_for_its_tool(memory_target: str) -> None:
    examples = _examples()
    assert examples, "the ExecuteToolRequest.arguments comment shows an example"
    with MemoryClient(memory_target) as client:
        schemas = {tool.name: json.loads(tool.json_schema) for tool in client.list_tools().tools}
    for file, tool, encoded in examples:
        assert tool in schemas, f"{file}: {tool} is not a tool ListTools serves"
        arguments = json.loads(json.loads(encoded))  # the comment shows the string as it is sent
        jsonschema.validate(arguments, schemas[tool]["function"]["parameters"])
