/**
 * Letta Agent Files through the TypeScript client against real servers: a shared .af file (two agents
 * sharing blocks) imported and checked against the file itself, exported and imported again, and a
 * broken file refused as an InvalidArgumentError naming the path inside it.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { InvalidArgumentError } from "../src/index.js";
import { REPO, startStrata, type Strata } from "./servers.js";

const EVIE = join(REPO, "tests", "data", "agentfile", "evie.af");

interface AfBlock {
  id: string;
  label: string;
  value: string;
  limit: number;
}
interface AfAgent {
  id: string;
  name: string;
  block_ids: string[];
  messages: unknown[];
}
interface AfDocument {
  agents: AfAgent[];
  blocks: AfBlock[];
}

describe("Agent Files through the TypeScript client", () => {
  let strata: Strata;
  before(async () => {
    strata = await startStrata();
  });
  after(async () => {
    await strata?.stop();
  });

  test("import a shared .af file: agents, shared blocks and messages as the file holds them", async () => {
    const bytes = readFileSync(EVIE);
    const document = JSON.parse(bytes.toString("utf8")) as AfDocument;
    const client = strata.client();
    const imported = await client.importAgentFile(bytes);
    assert.deepEqual(
      imported.agents.map((a) => a.name),
      document.agents.map((a) => a.name),
    );
    const ids = imported.report?.ids ?? {};
    const byId = new Map(document.blocks.map((b) => [b.id, b]));
    for (const [index, agent] of imported.agents.entries()) {
      const fileAgent = document.agents[index];
      assert.ok(fileAgent);
      const blocks = await client.raw.listBlocks({ agentId: agent.id, pageSize: 1000 });
      assert.deepEqual(
        blocks.blocks.map((b) => b.id),
        fileAgent.block_ids.map((id) => ids[id]),
      );
      assert.deepEqual(
        blocks.blocks.map((b) => [b.label, b.value, b.limit]),
        fileAgent.block_ids.map((id) => [byId.get(id)?.label, byId.get(id)?.value, byId.get(id)?.limit]),
      );
    }
    const messages = document.agents.reduce((sum, a) => sum + a.messages.length, 0);
    assert.equal(Number(imported.report?.messagesImported), messages);
    assert.ok(imported.report?.keptVerbatim.includes("tools"));

    const exported = await client.exportAgentFile(imported.agents[0]?.id ?? "", { withMessages: true });
    assert.deepEqual(exported.agentIds, imported.agents.map((a) => a.id));
    const again = await client.importAgentFile(exported.agentFile);
    assert.equal(again.agents.length, document.agents.length);
  });

  test("a broken file is an InvalidArgumentError naming the path inside it", async () => {
    const document = JSON.parse(readFileSync(EVIE).toString("utf8")) as AfDocument;
    document.agents[0]?.block_ids.push("block-404");
    const refused = await strata
      .client()
      .importAgentFile(new TextEncoder().encode(JSON.stringify(document)))
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    assert.ok(refused instanceof InvalidArgumentError, String(refused));
    assert.match(refused.message, /agents\[0\]\.block_ids\[12\]: no block 'block-404' in the file/);
  });
});
