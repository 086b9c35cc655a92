"""``/metrics`` answers on loopback unless the operator names a host (issue 25: ``":port"`` bound every
interface, so anyone who could reach the machine could read the service's figures)."""

from __future__ import annotations

import logging
import urllib.request

import pytest
from prometheus_client import CollectorRegistry

from strata_serving.metrics import serve_metrics


@pytest.mark.parametrize("address", [":0", "0", "127.0.0.1:0", "localhost:0"])
def test_metrics_without_a_host_bind_loopback_only(address: str) -> None:
    endpoint = serve_metrics(CollectorRegistry(), address)
    try:
        assert endpoint.server.server_address[0] in {"127.0.0.1", "::1"}
        with urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=10) as reply:
            assert reply.status == 200
    finally:
        endpoint.close()


def test_a_named_host_is_bound_as_named() -> None:
    endpoint = serve_metrics(CollectorRegistry(), "0.0.0.0:0")
    try:
        assert endpoint.server.server_address[0] == "0.0.0.0"
    finally:
        endpoint.close()


def test_the_address_served_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="strata.metrics"):
        endpoint = serve_metrics(CollectorRegistry(), "127.0.0.1:0")
    try:
        assert [r.getMessage() for r in caplog.records] == [
            f"metrics on http://127.0.0.1:{endpoint.port}/metrics"
        ]
    finally:
        endpoint.close()
