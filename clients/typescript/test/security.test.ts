/**
 * API key and TLS options against the compose-style RetrievalService: an API key and mutual TLS
 * (certificates from tests/security/certificates.py). Without the key the call is refused with a typed
 * UNAUTHENTICATED error; with key, CA and client certificate it is answered.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { RetrievalClient, UnauthenticatedError } from "../src/index.js";
import { makePki, type Server, startServer, untilServing } from "./servers.js";

const KEY = "ts-tests-9f3c1a7e5b2d8046c1e9a3f7";  // passes the services' key rule (24+ characters, not guessable)

describe("RetrievalService with an API key and mTLS", () => {
  let folder: string;
  let server: Server;
  let tls: { ca: Buffer; cert: Buffer; key: Buffer };
  before(async () => {
    folder = mkdtempSync(join(tmpdir(), "strata-ts-tls-"));
    const pki = makePki(folder);
    tls = { ca: readFileSync(pki.ca_cert), cert: readFileSync(pki.client_cert), key: readFileSync(pki.client_key) };
    server = await startServer("strata_retrieval.main", {
      STRATA_RETRIEVAL_ADDRESS: "127.0.0.1:0",
      STRATA_RETRIEVAL_DATA_DIR: join(folder, "retrieval"),
      STRATA_RETRIEVAL_MODEL_CACHE_DIR: join(folder, "models"),
      STRATA_RETRIEVAL_API_KEY: KEY,
      STRATA_RETRIEVAL_TLS_CERT_FILE: pki.server_cert,
      STRATA_RETRIEVAL_TLS_KEY_FILE: pki.server_key,
      STRATA_RETRIEVAL_TLS_CLIENT_CA_FILE: pki.ca_cert,
      STRATA_RETRIEVAL_LOG_JSON: "false",
    });
  });
  after(async () => {
    await server?.stop();
    rmSync(folder, { recursive: true, force: true });
  });

  test("key, CA and client certificate: the call is answered", async () => {
    const client = new RetrievalClient({ target: server.address, apiKey: KEY, tls, timeoutMs: 30_000 });
    await untilServing(() => client.stats({ tenantId: "t1" }));
    const stats = await client.stats({ tenantId: "t1" });
    assert.equal(stats.documentCount, 0n);
    assert.ok(stats.embeddingDimension > 0);
  });

  test("no API key: UnauthenticatedError with reason MISSING_CREDENTIALS", async () => {
    const client = new RetrievalClient({ target: server.address, tls, timeoutMs: 30_000 });
    const refused = await client.stats({ tenantId: "t1" }).catch((error: unknown) => error);
    assert.ok(refused instanceof UnauthenticatedError, String(refused));
    assert.equal(refused.reason, "MISSING_CREDENTIALS");
  });
});
