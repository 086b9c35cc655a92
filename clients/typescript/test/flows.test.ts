/**
 * The README's flows through the TypeScript client against real servers: agents and blocks, a memory
 * tool called with an object for arguments, rendering, archival and recall search, etags (a stale one is
 * a typed ABORTED error with its reason), a streaming Reindex, deadlines and BadRequest details.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  AbortedError,
  DeadlineExceededError,
  ERROR_DOMAIN,
  InvalidArgumentError,
  MemoryErrorReason,
  MessageRole,
  NotFoundError,
  RenderMode,
  SearchMode,
} from "../src/index.js";
import { startStrata, type Strata } from "./servers.js";

describe("MemoryService through the TypeScript client", () => {
  let strata: Strata;
  before(async () => {
    strata = await startStrata();
  });
  after(async () => {
    await strata?.stop();
  });

  test("create an agent, edit memory with a tool (object arguments) and render it", async () => {
    const client = strata.client();
    const agent = await client.createAgent({
      name: "support-bot",
      blocks: [
        { label: "persona", value: "I am a patient support agent.", limit: 2000 },
        { label: "human", value: "Name: Ada", limit: 2000 },
      ],
    });
    assert.match(agent.id, /^agent-/);
    assert.deepEqual(agent.blockLabels, ["persona", "human"]);

    const result = await client.executeTool(agent.id, "memory_replace", {
      label: "human",
      old_string: "Name: Ada",
      new_string: "Name: Ada Lovelace",
    });
    assert.equal(result.ok, true, result.text);
    assert.equal(result.block?.value, "Name: Ada Lovelace");

    const refused = await client.executeTool(agent.id, "memory_replace", { label: "human", old_string: "absent", new_string: "x" });
    assert.equal(refused.ok, false);
    assert.equal(refused.reason, MemoryErrorReason[MemoryErrorReason.TEXT_NOT_FOUND]);

    const rendered = await client.render(agent.id);
    assert.match(rendered, /<human>/);
    assert.match(rendered, /Name: Ada Lovelace/);
  });

  test("archival insert and search, recall append and search", async () => {
    const client = strata.client();
    const agent = await client.createAgent({ name: "archivist" });
    await client.insertArchival(
      agent.id,
      ["The user's cat is called Miso.", { text: "The user flies to Lisbon in May.", tags: ["travel"] }],
      { waitSearchable: true },
    );
    const hits = await client.searchArchival(agent.id, "what is the cat's name", { topK: 1 });
    assert.equal(hits[0]?.passage?.text, "The user's cat is called Miso.");
    const travel = await client.searchArchival(agent.id, "trip", { tags: ["travel"], mode: SearchMode.VECTOR });
    assert.deepEqual(travel.map((h) => h.passage?.text), ["The user flies to Lisbon in May."]);

    await client.appendMessages(
      agent.id,
      [
        { role: MessageRole.USER, content: "My favourite colour is teal." },
        { role: MessageRole.ASSISTANT, content: "Noted: teal." },
      ],
      { waitSearchable: true },
    );
    const recalled = await client.searchMessages(agent.id, "favourite colour", { roles: [MessageRole.USER] });
    assert.equal(recalled[0]?.message?.content, "My favourite colour is teal.");
  });

  test("a write repeated with its requestId is stored once; another body under it is REQUEST_ID_REUSED", async () => {
    const client = strata.client();
    const agent = await client.createAgent({ name: "retrier" });
    const requestId = "0b9f8a1e-4c1d-4f7a-9a5e-2f0c6b1d3e7a";
    const sent = [{ role: MessageRole.USER, content: "hello once" }];
    const first = await client.appendMessages(agent.id, sent, { requestId });
    const again = await client.appendMessages(agent.id, sent, { requestId });
    assert.deepEqual(again.map((m) => m.id), first.map((m) => m.id));
    const fresh = await client.appendMessages(agent.id, sent);
    assert.notEqual(fresh[0]?.id, first[0]?.id);
    await assert.rejects(
      client.appendMessages(agent.id, [{ role: MessageRole.USER, content: "another" }], { requestId }),
      (error: unknown) => error instanceof InvalidArgumentError && error.reason === "REQUEST_ID_REUSED",
    );
  });

  test("a stale etag is an AbortedError with reason ETAG_MISMATCH and changes nothing", async () => {
    const client = strata.client();
    const agent = await client.createAgent({ name: "etags", blocks: [{ label: "notes", value: "v1" }] });
    const read = await client.getBlock({ agentId: agent.id, label: "notes" });
    const written = await client.updateBlock({ agentId: agent.id, label: "notes" }, { value: "v2" }, { etag: read.etag });
    assert.notEqual(written.etag, read.etag);

    const stale = await client
      .updateBlock({ agentId: agent.id, label: "notes" }, { value: "v3" }, { etag: read.etag })
      .then(() => assert.fail("a stale etag was accepted"), (error: unknown) => error);
    assert.ok(stale instanceof AbortedError, String(stale));
    assert.equal(stale.reason, "ETAG_MISMATCH");
    assert.equal(stale.domain, ERROR_DOMAIN);
    assert.equal(stale.metadata["actual_etag"], written.etag);
    assert.ok(stale.requestId, "the server's request id is exposed");
    assert.equal((await client.getBlock({ blockId: read.id })).value, "v2");
  });

  test("edits based on one version merge on different lines; the same line is MERGE_CONFLICT", async () => {
    const client = strata.client();
    const notes = "name: Ada\nrole: engineer\nteam: core\ncity: Paris\n"; // changes need a line between them
    const agent = await client.createAgent({ name: "merges", blocks: [{ label: "notes", value: notes }] });
    const key = { agentId: agent.id, label: "notes" };
    const read = await client.getBlock(key);
    await client.updateBlock(key, { value: notes.replace("engineer", "architect") });
    const merged = await client.updateBlock(key, { value: notes.replace("Paris", "Nice") }, { baseEtag: read.etag });
    assert.equal(merged.value, "name: Ada\nrole: architect\nteam: core\ncity: Nice\n");

    const conflict = await client
      .updateBlock(key, { value: notes.replace("engineer", "chef") }, { baseEtag: read.etag })
      .then(() => assert.fail("an overlapping edit was merged"), (error: unknown) => error);
    assert.ok(conflict instanceof AbortedError, String(conflict));
    assert.equal(conflict.reason, "MERGE_CONFLICT");
    assert.deepEqual(
      conflict.fieldViolations.map((v) => v.field),
      ["block.value"],
    );
    const [hunk] = JSON.parse(conflict.metadata["hunks"] ?? "[]") as { current: string; proposed: string }[];
    assert.deepEqual([hunk?.current, hunk?.proposed], ["role: architect\n", "role: chef\n"]);
    assert.equal((await client.getBlock(key)).value, merged.value);
  });

  test("a prompt's receipt names its block versions and is recorded on the messages it produced", async () => {
    const client = strata.client();
    const agent = await client.createAgent({ name: "receipts", blocks: [{ label: "notes", value: "Ada" }] });
    const prompt = await client.systemPrompt(agent.id);
    const receipt = prompt.receipt;
    assert.ok(receipt, "the stored prompt has a receipt");
    assert.deepEqual(
      receipt.blocks.map((b) => [b.label, b.version]),
      [["notes", 1n]],
    );
    const [message] = await client.appendMessages(agent.id, [{ role: MessageRole.ASSISTANT, content: "Hi Ada" }], {
      promptReceiptId: receipt.id,
    });
    assert.equal(message?.promptReceiptId, receipt.id);
    assert.deepEqual((await client.promptReceipt(receipt.id)).blocks, receipt.blocks);
  });

  test("memory as of a past moment, and the diff since", async () => {
    const client = strata.client();
    const agent = await client.createAgent({ name: "as-of", blocks: [{ label: "notes", value: "Ada" }] });
    const then = await client.render(agent.id);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const moment = new Date();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await client.updateBlock({ agentId: agent.id, label: "notes" }, { value: "Grace" });
    assert.equal(await client.render(agent.id, RenderMode.UNSPECIFIED, undefined, { asOf: moment }), then);
    assert.match(await client.diffMemory(agent.id, { time: moment }), /\+Grace/);
  });

  test("bad input is an InvalidArgumentError naming the field; a missing agent a NotFoundError", async () => {
    const client = strata.client();
    const agent = await client.createAgent({ name: "limits", blocks: [{ label: "notes", value: "x" }] });
    const invalid = await client
      .updateBlock({ agentId: agent.id, label: "notes" }, { limit: -5 })
      .then(() => assert.fail("a negative limit was accepted"), (error: unknown) => error);
    assert.ok(invalid instanceof InvalidArgumentError, String(invalid));
    assert.equal(invalid.reason, "INVALID_ARGUMENT");
    assert.deepEqual(invalid.fieldViolations.map((v) => v.field), ["block.limit"]);
    assert.match(invalid.fieldViolations[0]?.description ?? "", /must be positive/);

    const missing = await client.getAgent("agent-does-not-exist").catch((error: unknown) => error);
    assert.ok(missing instanceof NotFoundError, String(missing));
    assert.equal(missing.reason, "AGENT_NOT_FOUND");
    assert.equal(missing.metadata["agent_id"], "agent-does-not-exist");
  });

  test("Reindex streams progress up to a final message with done set", async () => {
    const client = strata.client();
    const agent = await client.createAgent({ name: "reindexed" });
    await client.insertArchival(agent.id, ["one", "two", "three"], { waitSearchable: true });
    const progress = [];
    for await (const step of client.reindex({ agentId: agent.id, batchSize: 1 })) progress.push(step);
    const last = progress.at(-1);
    assert.equal(last?.done, true);
    assert.equal(last?.documentsDone, last?.documentsTotal);
    assert.ok(Number(last?.documentsTotal) >= 3);
    assert.ok(progress.length > 1, "more than one progress message with batch_size 1");
  });

  test("a call past its deadline is a DeadlineExceededError", async () => {
    const client = strata.client();
    const agent = await client.createAgent({ name: "deadline" });
    await client.insertArchival(agent.id, ["something to search"], { waitSearchable: true });
    strata.retrieval.process.kill("SIGSTOP"); // the search now waits on a RetrievalService that does not answer
    try {
      const late = await client.searchArchival(agent.id, "anything", {}, { timeoutMs: 300 }).catch((error: unknown) => error);
      assert.ok(late instanceof DeadlineExceededError, String(late));
    } finally {
      strata.retrieval.process.kill("SIGCONT");
    }
  });
});
