/**
 * Purge through the TypeScript client against real servers: a message and a conversation forgotten
 * with verified receipts whose counts match what was stored, the index read back by id (both legs
 * empty), and another tenant's id refused as NotFoundError with nothing deleted.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MessageRole, NotFoundError, RetrievalClient } from "../src/index.js";
import { startStrata, type Strata } from "./servers.js";

describe("Purge through the TypeScript client", () => {
  let strata: Strata;
  before(async () => {
    strata = await startStrata();
  });
  after(async () => {
    await strata?.stop();
  });

  test("a message and a conversation are purged with verified receipts and gone from both legs", async () => {
    const client = strata.client();
    const agent = await client.createAgent({ name: "sam" });
    await client.raw.createConversation({ agentId: agent.id, conversationId: "trip" });
    const said = await client.appendMessages(agent.id, [{ role: MessageRole.USER, content: "My PIN is 1234." }], {
      waitSearchable: true,
    });
    const trip = await client.appendMessages(
      agent.id,
      [
        { role: MessageRole.USER, content: "Bring the map." },
        { role: MessageRole.ASSISTANT, content: "Packed." },
      ],
      { conversationId: "trip", waitSearchable: true },
    );
    const messageId = said[0]?.id ?? "";

    const receipt = await client.purge({ messageId });

    assert.equal(receipt.target, `message/${messageId}`);
    assert.equal(receipt.verified, true, receipt.verificationNote);
    const counts = Object.fromEntries(receipt.counts.map((c) => [c.store, Number(c.deleted)]));
    assert.equal(counts.messages, 1);
    assert.equal(counts.vector_leg, 1);
    assert.equal(counts.text_leg, 1);

    const conversation = await client.purge({ agentId: agent.id, conversationId: "trip" });
    assert.equal(conversation.target, `conversation/${agent.id}/trip`);
    assert.deepEqual([...conversation.documentIds].sort(), trip.map((m) => m.id).sort());
    const index = new RetrievalClient({ target: strata.retrieval.address });
    const found = await index.raw.findDocuments({
      ids: { tenantId: `tenant-${process.pid}`, ids: [messageId, ...conversation.documentIds] },
    });
    assert.deepEqual([found.vectorIds, found.textIds], [[], []]);
  });

  test("another tenant's agent is NotFoundError and stays", async () => {
    const agent = await strata.client().createAgent({ name: "kept" });
    await assert.rejects(strata.client({ tenant: "someone-else" }).purge({ agentId: agent.id }), NotFoundError);
    assert.equal((await strata.client().getAgent(agent.id)).id, agent.id);
  });
});
