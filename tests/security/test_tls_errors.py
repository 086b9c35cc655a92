"""A TLS misconfiguration is reported as one, naming the file and what is wrong with it; "port in use"
(with its advice to share the port) is said only when the port is taken (issue 25: a mismatched key
was reported as a busy port, and following the advice split traffic between two processes)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings
from strata_serving.server import PortInUse
from strata_serving.tls import TlsConfigError
from tests.security.certificates import Pki


def settings(tmp_path: Path, tls: dict[str, Path], address: str = "127.0.0.1:0") -> MemorySettings:
    return MemorySettings.model_validate(
        {
            "address": address,
            "database_url": f"sqlite:///{tmp_path}/memory.sqlite3",
            "retrieval_address": "127.0.0.1:9",
            **tls,
        }
    )


def garbage(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
    return path


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("mismatched key", "the key {tls_key_file} does not belong to the certificate {tls_cert_file}"),
        ("garbage certificate", "the certificate {tls_cert_file} holds no usable PEM certificate"),
        ("garbage key", "the key {tls_key_file} holds no usable PEM private key"),
        ("garbage client CA", "the client CA {tls_client_ca_file} holds no usable PEM certificate"),
        ("missing key", "the key {tls_key_file} cannot be read"),
    ],
)
async def test_a_bad_tls_file_is_named_and_never_called_a_busy_port(
    tmp_path: Path, pki: Pki, case: str, expected: str
) -> None:
    files = {"tls_cert_file": pki.server_cert, "tls_key_file": pki.server_key}
    if case == "mismatched key":
        files["tls_key_file"] = pki.rogue_key
    elif case == "garbage certificate":
        files["tls_cert_file"] = garbage(tmp_path, "cert.pem")
    elif case == "garbage key":
        files["tls_key_file"] = garbage(tmp_path, "key.pem")
    elif case == "garbage client CA":
        files["tls_client_ca_file"] = garbage(tmp_path, "ca.pem")
    else:
        files["tls_key_file"] = tmp_path / "nowhere.key"

    with pytest.raises(TlsConfigError) as refused:
        await start_memory_server(settings(tmp_path, files))

    message = str(refused.value)
    assert message.startswith("TLS: ")
    assert expected.format(**files) in message
    assert "in use" not in message
    assert "REUSE_PORT" not in message


async def test_a_busy_port_with_good_tls_files_is_still_called_busy(tmp_path: Path, pki: Pki) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        files = {"tls_cert_file": pki.server_cert, "tls_key_file": pki.server_key}
        with pytest.raises(PortInUse, match="STRATA_MEMORY_REUSE_PORT"):
            await start_memory_server(settings(tmp_path, files, address))
