"""The tracer provider the services build (strata_serving.server_tracing.tracer_provider): trace and span
ids of the sizes a W3C traceparent carries (128 and 64 bits), drawn from a generator of its own, so a
program embedding a server keeps its seeded ``random`` sequence. tests/system/test_tracing.py follows
spans through real servers."""

from __future__ import annotations

import random

from strata_serving.server_tracing import tracer_provider


def test_ids_fit_a_traceparent_and_leave_the_global_random_state_alone() -> None:
    random.seed(7)
    expected = random.random()
    random.seed(7)
    provider = tracer_provider("strata-test")
    try:
        tracer = provider.get_tracer("test")
        ids = []
        for _ in range(64):
            with tracer.start_as_current_span("call") as span:
                ids.append((span.get_span_context().trace_id, span.get_span_context().span_id))
    finally:
        provider.shutdown()
    assert all(0 < trace_id < 2**128 and 0 < span_id < 2**64 for trace_id, span_id in ids)
    assert len({span_id for _, span_id in ids}) == 64
    assert random.random() == expected
