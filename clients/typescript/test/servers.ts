/**
 * Real Strata servers for the tests: RetrievalService and MemoryService started from the worktree's
 * .venv as child processes on free ports (port 0; the port is read from the "listening on" log line),
 * with data in a temporary folder. The developer's STRATA_* environment is not passed on.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { MemoryClient, RetrievalClient, type StrataOptions, StrataError } from "../src/index.js";

export const REPO = resolve(fileURLToPath(import.meta.url), "../../../../..");
export const PYTHON = join(REPO, ".venv", "bin", "python");

export interface Server {
  readonly process: ChildProcess;
  readonly address: string;
  stop(): Promise<void>;
}

function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith("STRATA_")) env[key] = value;
  return { ...env, ...extra };
}

/** Start `python -m <module>` and resolve with its address once it logs "listening on host:port". */
export function startServer(module: string, env: Record<string, string>): Promise<Server> {
  const child = spawn(PYTHON, ["-m", module], { cwd: REPO, env: cleanEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  return new Promise((resolveStart, reject) => {
    const seen = (chunk: Buffer) => {
      log += chunk.toString();
      const match = /listening on ([\d.]+:\d+)/.exec(log);
      if (match?.[1]) {
        child.stderr?.off("data", seen);
        child.stdout?.off("data", seen);
        child.stderr?.resume();
        child.stdout?.resume();
        resolveStart({ process: child, address: match[1], stop: () => stopProcess(child) });
      }
    };
    child.stderr?.on("data", seen);
    child.stdout?.on("data", seen);
    child.once("exit", (code) => reject(new Error(`${module} exited (${code}) before listening:\n${log}`)));
  });
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once("exit", () => done());
    child.kill("SIGTERM");
  });
}

/** Retry `probe` until it stops failing with UNAVAILABLE (a service still loading answers so). */
export async function untilServing(probe: () => Promise<unknown>): Promise<void> {
  for (;;) {
    try {
      await probe();
      return;
    } catch (error) {
      if (!(error instanceof StrataError) || error.code !== 14 /* Unavailable */) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export interface Strata {
  readonly memory: Server;
  readonly retrieval: Server;
  readonly dataDir: string;
  client(options?: Partial<StrataOptions>): MemoryClient;
  stop(): Promise<void>;
}

/** Both services, plaintext and without API keys; the tenant comes from "x-strata-tenant". */
export async function startStrata(): Promise<Strata> {
  const dataDir = mkdtempSync(join(tmpdir(), "strata-ts-"));
  const retrieval = await startServer("strata_retrieval.main", {
    STRATA_RETRIEVAL_ADDRESS: "127.0.0.1:0",
    STRATA_RETRIEVAL_DATA_DIR: join(dataDir, "retrieval"),
    STRATA_RETRIEVAL_MODEL_CACHE_DIR: join(dataDir, "models"),
    STRATA_RETRIEVAL_LOG_JSON: "false",
  });
  const memory = await startServer("strata_memory.main", {
    STRATA_MEMORY_ADDRESS: "127.0.0.1:0",
    STRATA_MEMORY_DATABASE_URL: `sqlite:///${join(dataDir, "memory.sqlite3")}`,
    STRATA_MEMORY_RETRIEVAL_ADDRESS: retrieval.address,
    STRATA_MEMORY_LOG_JSON: "false",
  });
  const tenant = `tenant-${process.pid}`;
  const strata: Strata = {
    memory,
    retrieval,
    dataDir,
    client: (options = {}) => new MemoryClient({ target: memory.address, tenant, timeoutMs: 30_000, ...options }),
    stop: async () => {
      await memory.stop();
      await retrieval.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  const probe = new RetrievalClient({ target: retrieval.address });
  await untilServing(() => probe.stats({ tenantId: tenant }));
  await untilServing(() => strata.client().raw.listTools({}));
  return strata;
}

/** Throwaway PKI from tests/security/certificates.py (the same certificates the Python tests use). */
export function makePki(folder: string): Record<"ca_cert" | "server_cert" | "server_key" | "client_cert" | "client_key", string> {
  const script = [
    "import json, sys, pathlib",
    "from tests.security.certificates import make_pki",
    "pki = make_pki(pathlib.Path(sys.argv[1]))",
    "print(json.dumps({k: str(v) for k, v in vars(pki).items()}))",
  ].join("\n");
  return JSON.parse(execFileSync(PYTHON, ["-c", script, folder], { cwd: REPO }).toString());
}
