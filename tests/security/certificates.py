"""Throwaway certificates for TLS tests, made with the ``openssl`` command line tool.

``make_pki`` writes a CA, a server certificate for ``localhost``/``127.0.0.1`` and a client
certificate (both signed by the CA), plus a client certificate from an unrelated CA.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    rogue_cert: Path
    rogue_key: Path


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _ca(folder: Path, name: str) -> tuple[Path, Path]:
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
    )  # fmt: skip
    return cert, key


def _leaf(folder: Path, name: str, ca: tuple[Path, Path], extensions: str) -> tuple[Path, Path]:
    cert, key, csr, ext = (folder / f"{name}{suffix}" for suffix in (".pem", ".key", ".csr", ".ext"))
    ext.write_text(extensions)
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", csr, "-subj", f"/CN={name}",
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
        "-out", cert, "-days", "2", "-extfile", ext,
    )  # fmt: skip
    return cert, key


def make_pki(folder: Path) -> Pki:
    folder.mkdir(parents=True, exist_ok=True)
    ca = _ca(folder, "strata-test-ca")
    server = _leaf(
        folder,
        "server",
        ca,
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    client = _leaf(folder, "client", ca, "extendedKeyUsage=clientAuth\n")
    rogue_ca = _ca(folder, "rogue-ca")
    rogue = _leaf(folder, "rogue-client", rogue_ca, "extendedKeyUsage=clientAuth\n")
    return Pki(ca[0], server[0], server[1], client[0], client[1], rogue[0], rogue[1])
