"""Load tests against a real MemoryService: bounded runs, JSON and generated requests, processes, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata.cli.main import main
from strata.client import MemoryClient
from strata.loadtest import LoadSpec, LoadTestError, run_load
from strata.memory.v1 import resources_pb2 as pb

HEALTH = "grpc.health.v1.Health/Check"
GET_BLOCK = "strata.memory.v1.MemoryService/GetBlock"


def test_a_count_bounded_run_makes_exactly_that_many_calls(memory_target: str) -> None:
    report = run_load(
        LoadSpec(target=memory_target, method=HEALTH, requests=200, concurrency=4, warmup_requests=20)
    )
    assert (report.count, report.ok, report.warmup_calls) == (200, 200, 20)
    assert report.status_codes == {"OK": 200}
    assert report.latency_ms["min"] <= report.latency_ms["p50"] <= report.latency_ms["max"]
    assert report.rps > 0


def test_a_duration_bounded_run_stops_by_itself(memory_target: str) -> None:
    report = run_load(LoadSpec(target=memory_target, method=HEALTH, duration=0.5, concurrency=2))
    assert report.count > 0
    assert report.ok == report.count
    assert report.seconds < 0.5 + 20  # the last calls in flight finish within their deadline


def test_json_requests_and_status_codes(memory_client: MemoryClient, memory_target: str) -> None:
    agent = memory_client.create_agent(agent=pb.Agent(name="load"))
    found = run_load(
        LoadSpec(
            target=memory_target,
            method=GET_BLOCK,
            data=json.dumps({"block": {"agent_id": agent.id, "label": "human"}}),
            requests=50,
            concurrency=2,
        )
    )
    assert found.status_codes == {"OK": 50}
    missing = run_load(
        LoadSpec(
            target=memory_target,
            method=GET_BLOCK,
            data=json.dumps({"block": {"agent_id": agent.id, "label": "no-such-label"}}),
            requests=10,
        )
    )
    assert missing.status_codes == {"NOT_FOUND": 10}
    assert missing.ok == 0
    assert list(missing.errors.values()) == [10]
    assert next(iter(missing.errors)).startswith("NOT_FOUND: ")


def test_a_factory_gives_each_worker_its_own_sequence(
    memory_client: MemoryClient, memory_target: str
) -> None:
    agents = [
        memory_client.create_agent(
            agent=pb.Agent(name=f"counter-{i}"), blocks=[pb.Block(label="human", value="Counter [n=0].")]
        ).id
        for i in range(3)
    ]
    report = run_load(
        LoadSpec(
            target=memory_target,
            method="strata.memory.v1.MemoryService/ExecuteTool",
            factory="tests.loadtest.factories:counter_replace",
            params={"agent_ids": agents},
            concurrency=3,
            requests=30,
            warmup_requests=6,
        )
    )
    assert report.status_codes == {"OK": 30}
    counters = [memory_client.get_block(agent_id=a, label="human").value for a in agents]
    # 36 edits in all; each worker applied its own edits in order, so the counters add up.
    assert sum(int(v.split("[n=")[1].split("]")[0]) for v in counters) == 36


def test_fixed_rate_paces_the_calls(memory_client: MemoryClient, memory_target: str) -> None:
    agent = memory_client.create_agent(agent=pb.Agent(name="paced"))
    report = run_load(
        LoadSpec(
            target=memory_target,
            method=GET_BLOCK,
            factory="tests.loadtest.factories:slots_as_labels",
            params={"agent_id": agent.id},
            rate=100.0,
            concurrency=4,
            requests=20,
        )
    )
    assert report.count == 20
    assert report.seconds >= 0.18  # 20 calls at 100/s start over 0.19 s at the earliest
    assert report.status_codes == {"NOT_FOUND": 20}


def test_several_processes_start_together_and_their_reports_merge(memory_target: str) -> None:
    report = run_load(
        LoadSpec(
            target=memory_target, method=HEALTH, requests=120, concurrency=4, processes=2, warmup_requests=10
        )
    )
    assert (report.count, report.ok) == (120, 120)
    assert report.settings["processes"] == 2


def test_a_failing_child_process_fails_the_run(memory_target: str) -> None:
    spec = LoadSpec(
        target=memory_target,
        method=GET_BLOCK,
        factory="tests.loadtest.factories:no_such_factory",
        requests=4,
        concurrency=2,
        processes=2,
    )
    with pytest.raises(LoadTestError, match="no_such_factory"):
        run_load(spec)


def test_remote_targets_are_refused_before_any_call() -> None:
    with pytest.raises(LoadTestError, match="loopback only"):
        run_load(LoadSpec(target="192.0.2.1:50051", method=HEALTH, requests=1))


def test_the_cli_prints_the_summary_and_writes_json(
    memory_target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    code = main(["--target", memory_target, "loadtest", HEALTH, "-n", "40", "-c", "2", "-o", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Requests/sec" in printed
    assert "[OK]  40 responses" in printed
    assert json.loads(out.read_text())["count"] == 40


def test_the_cli_exits_2_on_a_refused_target(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--target", "192.0.2.1:50051", "loadtest", HEALTH, "-n", "1"])
    assert code == 2
    assert "loopback only" in capsys.readouterr().err


def test_the_cli_exits_1_when_calls_fail(memory_target: str, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.dumps({"block": {"agent_id": "agent-missing", "label": "human"}})
    code = main(["--target", memory_target, "--json", "loadtest", GET_BLOCK, "-d", data, "-n", "3"])
    assert code == 1
    assert json.loads(capsys.readouterr().out)["status_codes"] == {"NOT_FOUND": 3}
