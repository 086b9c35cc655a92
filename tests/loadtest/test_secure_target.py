"""`strata loadtest` against the compose-style RetrievalService: an API key and mutual TLS.

Before this, loadtest sent neither a key nor TLS, so every call to such a service failed
(UNAUTHENTICATED over plaintext: the channel did not even connect).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from strata.cli.main import main
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings
from tests.security.certificates import Pki, make_pki
from tests.servers import LoopThread

KEY = "loadtest-service-key-7f3a9c2e51b8"
STATS = "strata.retrieval.v1.RetrievalService/Stats"
REQUEST = json.dumps({"filter": {"tenant_id": "t-load"}})


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def secure_retrieval(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[str]:
    """A RetrievalService with a service API key that accepts only mTLS (as docker-compose runs it)."""
    root = tmp_path_factory.mktemp("retrieval")
    settings = RetrievalSettings(
        address="127.0.0.1:0",
        data_dir=root / "data",
        model_cache_dir=root / "models",
        workers=2,
        grace_seconds=0,
        log_json=False,
        log_level="WARNING",
        api_key=KEY,
        tls_cert_file=pki.server_cert,
        tls_key_file=pki.server_key,
        tls_client_ca_file=pki.ca_cert,
    )
    thread = LoopThread()

    async def start() -> RetrievalApp:
        app = RetrievalApp(settings)
        await app.start()
        return app

    app = thread.run(start())
    yield app.address
    thread.run(app.stop())
    thread.close()


def tls_args(pki: Pki) -> list[str]:
    """The global TLS options' names, given after ``loadtest`` (one set of names for the whole CLI)."""
    return [
        "--root-cert",
        str(pki.ca_cert),
        "--client-cert",
        str(pki.client_cert),
        "--client-key",
        str(pki.client_key),
    ]


def ghz_tls_args(pki: Pki) -> list[str]:
    """ghz's and grpcurl's spellings, kept as aliases."""
    return ["--cacert", str(pki.ca_cert), "--cert", str(pki.client_cert), "--key", str(pki.client_key)]


def test_key_and_mtls_load_the_service_and_write_csv_and_json(
    secure_retrieval: str, pki: Pki, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--target", secure_retrieval, "loadtest", STATS, "-d", REQUEST, "-n", "40", "-c", "4"]
    code = main(
        [
            *argv,
            "--api-key",
            KEY,
            *tls_args(pki),
            "-H",
            "x-request-id:loadtest",
            "-o",
            str(tmp_path / "c.csv"),
        ]
    )
    assert code == 0, capsys.readouterr()
    text = capsys.readouterr().out
    assert "[OK]  40 responses" in text
    for name in ("p10", "p25", "p50", "p75", "p90", "p95", "p99"):
        assert f"  {name} " in text
    assert "Response time histogram (ms):" in text
    rows = list(csv.DictReader((tmp_path / "c.csv").read_text().splitlines()))
    assert len(rows) == 40
    assert {row["status"] for row in rows} == {"OK"}
    assert {row["error"] for row in rows} == {""}
    assert all(float(row["latency_ms"]) > 0 for row in rows)
    starts = [datetime.fromisoformat(row["start_time"]) for row in rows]
    assert starts == sorted(starts)
    assert all(abs((start - datetime.now(UTC)).total_seconds()) < 300 for start in starts)
    assert main([*argv, "--api-key", KEY, *ghz_tls_args(pki)]) == 0
    capsys.readouterr()

    assert (
        main([*argv, "--api-key", KEY, *tls_args(pki), "--format", "json", "-o", str(tmp_path / "r.json")])
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert sum(bucket["count"] for bucket in printed["histogram"]) == 40
    assert printed["settings"]["tls"] is True
    assert printed["settings"]["metadata_keys"] == ["authorization"]  # the key itself is not reported
    written = json.loads((tmp_path / "r.json").read_text())
    assert len(written["latencies_ms"]) == 40


def test_the_key_comes_from_strata_api_key_and_insecure_skips_server_verification(
    secure_retrieval: str, pki: Pki, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STRATA_API_KEY", KEY)
    client_cert = ["--cert", str(pki.client_cert), "--key", str(pki.client_key)]
    argv = [
        "--target",
        secure_retrieval,
        "loadtest",
        STATS,
        "-d",
        REQUEST,
        "-n",
        "10",
        "--insecure",
        *client_cert,
    ]
    assert main(argv) == 0, capsys.readouterr()
    assert "[OK]  10 responses" in capsys.readouterr().out


def test_without_the_key_errors_are_counted_per_message(
    secure_retrieval: str, pki: Pki, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("STRATA_API_KEY", raising=False)
    argv = ["--target", secure_retrieval, "loadtest", STATS, "-d", REQUEST, "-n", "12", *tls_args(pki)]
    wrong = ["--api-key", "not-the-key"]
    assert main([*argv, "--format", "json"]) == 1
    missing = json.loads(capsys.readouterr().out)
    assert main([*argv, *wrong, "--format", "json"]) == 1
    invalid = json.loads(capsys.readouterr().out)
    assert missing["status_codes"] == invalid["status_codes"] == {"UNAUTHENTICATED": 12}
    assert list(missing["errors"].values()) == [12]
    assert list(invalid["errors"].values()) == [12]
    assert next(iter(missing["errors"])) != next(iter(invalid["errors"]))  # two messages, each counted
    assert next(iter(missing["errors"])).startswith("UNAUTHENTICATED: ")


def test_malformed_headers_are_a_usage_error(
    secure_retrieval: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--target", secure_retrieval, "loadtest", STATS, "-n", "1", "-H", "no-colon"]) == 2
    assert "KEY:VALUE" in capsys.readouterr().err
