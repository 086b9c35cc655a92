"""Which server a folder may talk to with the user's credentials: keys are bound to servers the user chose.

A MemFS folder records its server (``.strata/memfs.json``, committed, so anyone who shares the
folder chooses what it says). The user's API key (``--api-key`` or ``STRATA_API_KEY``) and TLS
identity go to that recorded server only when:

1. it is the target the user configured for this run (``--target`` or ``STRATA_MEMORY_TARGET``); or
2. the user confirmed it for this folder: by cloning the folder from it, or by running a command
   once with ``--target`` naming it (a folder someone else made, copied or cloned with git);
   the confirmation is kept *outside* the folder, in ``$XDG_CONFIG_HOME/strata/memfs-targets.json``
   (``~/.config/...``), keyed by the folder's real path, so a clone or a commit cannot forge it.

And in case 2 a key never goes over plaintext to a host that is not loopback: the user must name
the target (``--target``) in that very run, or connect with TLS (``--root-cert``).
"""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path

CONFIG_ENV = "XDG_CONFIG_HOME"
TRUST_FILE = Path("strata") / "memfs-targets.json"
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def trust_path() -> Path:
    """Where confirmations are kept: the user's configuration folder, never a MemFS folder."""
    base = os.environ.get(CONFIG_ENV) or str(Path.home() / ".config")
    return Path(base) / TRUST_FILE


def confirmed(root: Path, target: str) -> bool:
    """Whether the user confirmed ``target`` for the folder at ``root``."""
    return _load().get(str(root.resolve())) == target


def confirm(root: Path, target: str) -> None:
    """Record that the user chose ``target`` for the folder at ``root`` (replacing an earlier one)."""
    entries = _load()
    entries[str(root.resolve())] = target
    path = trust_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def is_loopback(target: str) -> bool:
    """Whether every host a gRPC ``target`` names is this machine (``127.0.0.1:50051``, ``[::1]:x``,
    ``localhost:x``, ``ipv4:127.0.0.1:1,127.0.0.2:2``, ``unix:...``)."""
    if target.startswith(("unix:", "unix-abstract:")):
        return True
    for scheme in ("ipv4:", "ipv6:", "dns:///", "dns:"):
        target = target.removeprefix(scheme)
    return all(_host_is_loopback(_host(address)) for address in target.split(","))


def _host(address: str) -> str:
    if address.startswith("["):
        return address[1 : address.find("]")]
    host, colon, port = address.rpartition(":")
    return host if colon and port.isdigit() and host.count(":") == 0 else address


def _host_is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _load() -> dict[str, str]:
    try:
        raw = json.loads(trust_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(k): str(v) for k, v in raw.items()}
