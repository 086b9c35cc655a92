"""Request factories the tests name as ``tests.loadtest.factories:…`` (importable in child processes)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from strata.loadtest import Method, RequestFactory, RequestSlot
from strata.memory.v1 import memory_service_pb2 as api


def counter_replace(method: Method, params: Mapping[str, Any]) -> RequestFactory:
    """memory_replace ``[n=S]`` -> ``[n=S+1]`` in the block of the worker's own agent."""
    agents = list(params["agent_ids"])

    def make(slot: RequestSlot) -> api.ExecuteToolRequest:
        arguments = {
            "label": "human",
            "old_string": f"[n={slot.sequence}]",
            "new_string": f"[n={slot.sequence + 1}]",
        }
        return api.ExecuteToolRequest(
            agent_id=agents[slot.worker], tool_name="memory_replace", arguments=json.dumps(arguments)
        )

    return make


def slots_as_labels(method: Method, params: Mapping[str, Any]) -> RequestFactory:
    """GetBlock for a label naming the slot, so a test can see which slots were asked for."""

    def make(slot: RequestSlot) -> api.GetBlockRequest:
        request = method.request_type()
        assert isinstance(request, api.GetBlockRequest)
        request.block.agent_id = str(params["agent_id"])
        request.block.label = f"w{slot.worker}-s{slot.sequence}-i{slot.issued}"
        return request

    return make
