/**
 * A hostile server cannot keep the client paging forever (src/paging.ts): a real gRPC server (Connect's
 * Node adapter over HTTP/2) whose ListBlocks and ListAgents never end. A repeated next_page_token ends
 * the listing after two calls, ever-new tokens at the client's page cap, both with PagingError. After
 * SAFETY_STOP calls the server refuses, so a client without the guard fails instead of hanging.
 */
import assert from "node:assert/strict";
import { createServer, type Http2Server, type Http2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { everyAgent, everyBlock, MAX_PAGES, MemoryClient, PagingError } from "../src/index.js";
import { MemoryService } from "../src/gen/strata/memory/v1/memory_service_pb.js";
import { AgentSchema, BlockSchema } from "../src/gen/strata/memory/v1/resources_pb.js";

const SAFETY_STOP = 500;

describe("paging against a server whose pages never end", () => {
  let server: Http2Server;
  let target: string;
  const sessions = new Set<Http2Session>();
  const state = { calls: 0, repeat: true };
  const token = () => {
    state.calls += 1;
    if (state.calls > SAFETY_STOP) throw new ConnectError("the test's safety stop", Code.ResourceExhausted);
    return state.repeat ? "same-token" : `token-${state.calls}`;
  };

  before(async () => {
    const routes = (router: ConnectRouter) =>
      router.service(MemoryService, {
        listBlocks: () => ({ blocks: [create(BlockSchema, { label: `b${state.calls}` })], nextPageToken: token() }),
        listAgents: () => ({ agents: [create(AgentSchema, { id: `agent-${state.calls}` })], nextPageToken: token() }),
      });
    server = createServer(connectNodeAdapter({ routes }));
    server.on("session", (session: Http2Session) => sessions.add(session));
    await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
    target = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const session of sessions) session.destroy(); // the clients keep their HTTP/2 sessions open
    await new Promise<void>((done) => server.close(() => done()));
  });

  test("a repeated token ends the listing after two calls", async () => {
    Object.assign(state, { calls: 0, repeat: true });
    const client = new MemoryClient({ target, timeoutMs: 5_000 });
    const seen: string[] = [];
    const refused = await (async () => {
      for await (const block of everyBlock(client, "agent-1")) seen.push(block.label);
    })().catch((error: unknown) => error);
    assert.ok(refused instanceof PagingError, String(refused));
    assert.equal(refused.reason, "PAGING_DID_NOT_END");
    assert.match(refused.message, /ListBlocks: the server sent page token "same-token" a second time/);
    assert.equal(state.calls, 2);
    assert.deepEqual(seen, ["b0", "b1"]);
  });

  test("ever-new tokens end at the client's page cap", async () => {
    Object.assign(state, { calls: 0, repeat: false });
    const client = new MemoryClient({ target, timeoutMs: 5_000 });
    let agents = 0;
    const refused = await (async () => {
      for await (const _ of everyAgent(client, { maxPages: 25 })) agents += 1;
    })().catch((error: unknown) => error);
    assert.ok(refused instanceof PagingError, String(refused));
    assert.match(refused.message, /ListAgents: more than 25 pages/);
    assert.equal(state.calls, 25);
    assert.equal(agents, 25);
    assert.equal(MAX_PAGES, 10_000);
  });
});
