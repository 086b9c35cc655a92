"""Where the contract's tools live: the proto root and the npm-installed buf and protoc-gen-es."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = ROOT / "proto"
TS_DIR = ROOT / "clients" / "typescript"
NODE_BIN = TS_DIR / "node_modules" / ".bin"


def node_tool(name: str) -> Path:
    """An npm-installed executable; `make node` (a dependency of `make test`) installs them."""
    path = NODE_BIN / name
    assert path.exists(), f"{path} is missing: run `make node` (npm ci in {TS_DIR})"
    return path


def run(args: list[str | Path], cwd: Path) -> str:
    """Run a tool; on failure the assertion shows its output."""
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{args[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout
