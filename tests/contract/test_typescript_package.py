"""The TypeScript client as a package (issue 31 item 4): ``npm run generate`` regenerates every stub
the client compiles against (Strata's and google.rpc's), and a tarball made by ``npm pack`` installs
into a scratch project offline (its runtime dependencies packed from the client's node_modules),
whose script imports ``@strata/client`` and calls a real MemoryService."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.contract.tooling import PROTO_ROOT, TS_DIR, node_tool, run


def test_generate_rebuilds_every_stub_the_client_compiles_against(tmp_path: Path) -> None:
    copy = tmp_path / "clients" / "typescript"
    shutil.copytree(TS_DIR, copy, ignore=shutil.ignore_patterns("node_modules", "dist"))
    (copy / "node_modules").symlink_to(TS_DIR / "node_modules")
    (tmp_path / "proto").symlink_to(PROTO_ROOT)
    shutil.rmtree(copy / "src" / "gen")
    node_tool("buf")  # installed by `make node`
    run(["npm", "run", "--silent", "generate"], cwd=copy)
    assert (copy / "src" / "gen" / "google" / "rpc" / "status_pb.ts").exists()
    assert (copy / "src" / "gen" / "strata" / "memory" / "v1" / "memory_service_pb.ts").exists()
    run([TS_DIR / "node_modules" / ".bin" / "tsc", "-p", "tsconfig.json", "--noEmit"], cwd=copy)


def test_a_packed_tarball_works_from_another_project(tmp_path: Path, memory_target: str) -> None:
    packed = json.loads(run(["npm", "pack", "--json", "--pack-destination", str(tmp_path)], cwd=TS_DIR))
    tarball = tmp_path / packed[0]["filename"]
    shipped = {entry["path"] for entry in packed[0]["files"]}
    assert {"dist/src/index.js", "dist/src/index.d.ts", "package.json"} <= shipped
    assert not any(path.startswith(("dist/test", "test/")) for path in shipped)
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text(json.dumps({"name": "app", "private": True, "type": "module"}))
    # Offline: the client's runtime dependencies come as tarballs packed from its own node_modules.
    dependencies = json.loads((TS_DIR / "package.json").read_text())["dependencies"]
    packs = [
        tmp_path
        / json.loads(run(["npm", "pack", "--json", "--pack-destination", str(tmp_path), folder], cwd=TS_DIR))[
            0
        ]["filename"]
        for folder in (f"node_modules/{name}" for name in dependencies)
    ]
    run(["npm", "install", "--offline", "--no-audit", "--no-fund", *map(str, packs), str(tarball)], cwd=app)
    (app / "main.js").write_text(
        'import { MemoryClient, NotFoundError } from "@strata/client";\n'
        f'const memory = new MemoryClient({{ target: "{memory_target}", tenant: "ts-package" }});\n'
        'const agent = await memory.createAgent({ name: "from-a-tarball" });\n'
        "try { await memory.getAgent('no-such-agent'); }\n"
        "catch (e) { if (!(e instanceof NotFoundError)) throw e; }\n"
        "console.log(JSON.stringify({ name: agent.name }));\n"
    )
    done = subprocess.run(
        ["node", "main.js"],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "from-a-tarball"}
