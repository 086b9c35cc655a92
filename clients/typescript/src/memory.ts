/**
 * MemoryClient: typed helpers for the common MemoryService flows over the generated Connect client.
 * Every method throws a StrataError subclass (errors.ts) on failure; `raw` is the generated client
 * for everything else (each RPC, with protobuf-es message types).
 */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { FieldMaskSchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type CallOptions, type Client, createClient, type Transport } from "@connectrpc/connect";
import { toStrataError } from "./errors.js";
import {
  type ArchivalHit,
  type ExecuteToolResponse,
  type ExportAgentFileResponse,
  type ImportAgentFileResponse,
  MemoryService,
  type MessageHit,
  type PurgeReceipt,
  type ReindexProgress,
  SearchMode,
  TagMatch,
} from "./gen/strata/memory/v1/memory_service_pb.js";
import {
  type Agent,
  AgentSchema,
  type Block,
  BlockSchema,
  MessageRole,
  type Message,
  MessageSchema,
  type Passage,
  PassageSchema,
  type PromptReceipt,
  RenderMode,
  type SystemPrompt,
} from "./gen/strata/memory/v1/resources_pb.js";
import { type PurgeTarget, purgeRequest } from "./purge.js";
import { createStrataTransport, type StrataOptions } from "./transport.js";

export { MessageRole, RenderMode, SearchMode, TagMatch };

export interface BlockInit {
  readonly label: string;
  readonly value?: string;
  readonly limit?: number;
  readonly description?: string;
  readonly readOnly?: boolean;
}

export interface AgentInit {
  readonly name: string;
  /** Raw system text; "{CORE_MEMORY}" is replaced by the rendered memory. */
  readonly system?: string;
  readonly blocks?: readonly BlockInit[];
  readonly timezone?: string;
  readonly renderMode?: RenderMode;
}

/** A block: by id, or by the label it has in an agent's memory. */
export type BlockKey = { readonly blockId: string } | { readonly agentId: string; readonly label: string };

export interface BlockChanges {
  readonly value?: string;
  readonly limit?: number;
  readonly description?: string;
  readonly readOnly?: boolean;
}

export interface PassageInit {
  readonly text: string;
  readonly tags?: readonly string[];
  readonly metadata?: Readonly<Record<string, string>>;
  readonly createTime?: Date;
}

export interface MessageInit {
  readonly role: MessageRole;
  readonly content: string;
  readonly name?: string;
}

export interface SearchOptions {
  readonly mode?: SearchMode;
  readonly tags?: readonly string[];
  readonly tagMatch?: TagMatch;
  readonly topK?: number;
  readonly start?: Date;
  readonly end?: Date;
}

export interface MessageSearchOptions {
  readonly mode?: SearchMode;
  readonly conversationId?: string;
  readonly roles?: readonly MessageRole[];
  readonly limit?: number;
}

const CHANGE_PATHS: Record<keyof BlockChanges, string> = {
  value: "value",
  limit: "limit",
  description: "description",
  readOnly: "read_only",
};

function ref(key: BlockKey) {
  return "blockId" in key ? { blockId: key.blockId } : { agentId: key.agentId, label: key.label };
}

async function typed<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (thrown) {
    throw toStrataError(thrown);
  }
}

export class MemoryClient {
  /** The generated client: one method per RPC of strata.memory.v1.MemoryService. */
  readonly raw: Client<typeof MemoryService>;

  constructor(options: StrataOptions | Transport) {
    const transport = "target" in options ? createStrataTransport(options) : options;
    this.raw = createClient(MemoryService, transport);
  }

  /** An agent with the given blocks ("persona" and "human" when none are given). */
  createAgent(init: AgentInit, call?: CallOptions): Promise<Agent> {
    const agent = create(AgentSchema, {
      name: init.name,
      system: init.system ?? "",
      timezone: init.timezone ?? "",
      renderMode: init.renderMode ?? RenderMode.UNSPECIFIED,
    });
    const blocks = (init.blocks ?? []).map((b) =>
      create(BlockSchema, { label: b.label, value: b.value ?? "", limit: b.limit, description: b.description ?? "", readOnly: b.readOnly ?? false }),
    );
    return typed(this.raw.createAgent({ agent, blocks }, call));
  }

  getAgent(agentId: string, call?: CallOptions): Promise<Agent> {
    return typed(this.raw.getAgent({ agentId }, call));
  }

  getBlock(key: BlockKey, call?: CallOptions): Promise<Block> {
    return typed(this.raw.getBlock({ block: ref(key) }, call));
  }

  /**
   * Change the given fields of a block. With `etag` (from a Block read earlier) the write applies only
   * if nobody changed the block since; otherwise it fails with AbortedError, reason "ETAG_MISMATCH".
   * With `baseEtag` instead, the changes were made from that version and are merged line by line onto
   * what changed since; overlapping lines fail with AbortedError, reason "MERGE_CONFLICT" (one
   * fieldViolation per conflicting hunk, and metadata.hunks as JSON), and nothing is written.
   * `validateOnly` checks and merges without writing and returns the block as it would be.
   */
  updateBlock(
    key: BlockKey,
    changes: BlockChanges,
    options: { etag?: string; baseEtag?: string; validateOnly?: boolean } = {},
    call?: CallOptions,
  ): Promise<Block> {
    const named = (Object.keys(changes) as (keyof BlockChanges)[]).filter((k) => changes[k] !== undefined);
    return typed(
      this.raw.updateBlock(
        {
          ref: ref(key),
          block: create(BlockSchema, { ...changes }),
          updateMask: create(FieldMaskSchema, { paths: named.map((k) => CHANGE_PATHS[k]) }),
          etag: options.etag ?? "",
          baseEtag: options.baseEtag ?? "",
          validateOnly: options.validateOnly ?? false,
        },
        call,
      ),
    );
  }

  /**
   * Run a memory tool as the agent's LLM would. `args` is an object: it is sent JSON-encoded, as the
   * contract's string field ExecuteToolRequest.arguments requires. A tool's own failure (text not found,
   * over the limit...) is a result with ok=false and a reason, not a thrown error.
   */
  executeTool(
    agentId: string,
    toolName: string,
    args: Readonly<Record<string, unknown>>,
    options: { conversationId?: string; etag?: string; baseEtag?: string } = {},
    call?: CallOptions,
  ): Promise<ExecuteToolResponse> {
    return typed(
      this.raw.executeTool(
        {
          agentId,
          toolName,
          arguments: JSON.stringify(args),
          conversationId: options.conversationId ?? "",
          etag: options.etag ?? "",
          baseEtag: options.baseEtag ?? "",
        },
        call,
      ),
    );
  }

  /** The agent's core memory as it goes into the prompt (the agent's own render mode by default). */
  async render(
    agentId: string,
    mode: RenderMode = RenderMode.UNSPECIFIED,
    call?: CallOptions,
    past: { asOf?: Date; receiptId?: string } = {},
  ): Promise<string> {
    const asOf = past.asOf ? timestampFromDate(past.asOf) : undefined;
    return (await typed(this.raw.renderMemory({ agentId, mode, asOf, receiptId: past.receiptId ?? "" }, call))).text;
  }

  /** A unified diff of the agent's whole core memory between two moments (`to` defaults to now). */
  async diffMemory(
    agentId: string,
    from: { time?: Date; receiptId?: string },
    to: { time?: Date; receiptId?: string } = {},
    call?: CallOptions,
  ): Promise<string> {
    const response = await typed(
      this.raw.diffMemory(
        {
          agentId,
          fromTime: from.time ? timestampFromDate(from.time) : undefined,
          fromReceiptId: from.receiptId ?? "",
          toTime: to.time ? timestampFromDate(to.time) : undefined,
          toReceiptId: to.receiptId ?? "",
        },
        call,
      ),
    );
    return response.diff;
  }

  /**
   * The stored system prompt, whether memory changed since (`stale`) and its `receipt`: the block ids
   * and versions and the counts it was built from, under a stable id to pass to `appendMessages`.
   */
  systemPrompt(agentId: string, conversationId = "", call?: CallOptions): Promise<SystemPrompt> {
    return typed(this.raw.getSystemPrompt({ agentId, conversationId }, call));
  }

  /** A prompt receipt by id (SystemPrompt.receipt.id, or a message's promptReceiptId). */
  promptReceipt(receiptId: string, call?: CallOptions): Promise<PromptReceipt> {
    return typed(this.raw.getPromptReceipt({ receiptId }, call));
  }

  /**
   * Insert passages into the agent's default archive; `waitSearchable` returns once they are searchable.
   * The call carries `requestId` (a new UUID when not given): a retry of it, by a mesh or by you with
   * the same `requestId`, stores the passages once.
   */
  async insertArchival(
    agentId: string,
    passages: readonly (string | PassageInit)[],
    options: { archiveId?: string; waitSearchable?: boolean; requestId?: string } = {},
    call?: CallOptions,
  ): Promise<Passage[]> {
    const messages = passages.map((p) => {
      const init = typeof p === "string" ? { text: p } : p;
      return create(PassageSchema, {
        text: init.text,
        tags: [...(init.tags ?? [])],
        metadata: { ...(init.metadata ?? {}) },
        createTime: init.createTime && timestampFromDate(init.createTime),
      });
    });
    const response = await typed(
      this.raw.createPassages(
        {
          agentId,
          archiveId: options.archiveId ?? "",
          passages: messages,
          waitSearchable: options.waitSearchable ?? false,
          requestId: options.requestId || randomUUID(),
        },
        call,
      ),
    );
    return response.passages;
  }

  async searchArchival(agentId: string, query: string, options: SearchOptions = {}, call?: CallOptions): Promise<ArchivalHit[]> {
    const response = await typed(
      this.raw.searchArchival(
        {
          agentId,
          query,
          mode: options.mode ?? SearchMode.UNSPECIFIED,
          tags: [...(options.tags ?? [])],
          tagMatch: options.tagMatch ?? TagMatch.UNSPECIFIED,
          topK: options.topK ?? 0,
          startTime: options.start && timestampFromDate(options.start),
          endTime: options.end && timestampFromDate(options.end),
        },
        call,
      ),
    );
    return response.hits;
  }

  /**
   * Store messages in order; `requestId` as in `insertArchival` (a retry stores them once);
   * `promptReceiptId` (SystemPrompt.receipt.id) is recorded on each message.
   */
  async appendMessages(
    agentId: string,
    messages: readonly MessageInit[],
    options: { conversationId?: string; waitSearchable?: boolean; requestId?: string; promptReceiptId?: string } = {},
    call?: CallOptions,
  ): Promise<Message[]> {
    const response = await typed(
      this.raw.appendMessages(
        {
          agentId,
          conversationId: options.conversationId ?? "",
          messages: messages.map((m) => create(MessageSchema, { role: m.role, content: m.content, name: m.name ?? "" })),
          waitSearchable: options.waitSearchable ?? false,
          requestId: options.requestId || randomUUID(),
          promptReceiptId: options.promptReceiptId ?? "",
        },
        call,
      ),
    );
    return response.messages;
  }

  async searchMessages(agentId: string, query: string, options: MessageSearchOptions = {}, call?: CallOptions): Promise<MessageHit[]> {
    const response = await typed(
      this.raw.searchMessages(
        {
          agentId,
          query,
          mode: options.mode ?? SearchMode.UNSPECIFIED,
          conversationId: options.conversationId ?? "",
          roles: [...(options.roles ?? [])],
          limit: options.limit ?? 0,
        },
        call,
      ),
    );
    return response.hits;
  }

  /**
   * Create the agents, blocks and messages of a Letta Agent File (the .af file's bytes), all or nothing:
   * a file that cannot be imported whole throws InvalidArgumentError naming the path inside it. The
   * report says what was kept verbatim (tools, LLM settings, groups, ...) and which secrets were dropped.
   */
  async importAgentFile(
    agentFile: Uint8Array,
    options: { waitSearchable?: boolean; requestId?: string } = {},
    call?: CallOptions,
  ): Promise<ImportAgentFileResponse> {
    const request = { agentFile, waitSearchable: options.waitSearchable ?? false, requestId: options.requestId || randomUUID() };
    return typed(this.raw.importAgentFile(request, call));
  }

  /** The agent, with the agents imported together with it, as Agent File bytes (`agentFile`). */
  async exportAgentFile(agentId: string, options: { withMessages?: boolean } = {}, call?: CallOptions): Promise<ExportAgentFileResponse> {
    return typed(this.raw.exportAgentFile({ agentId, withMessages: options.withMessages ?? false }, call));
  }

  /**
   * Forget `target` with every stored copy of it (cannot be undone). The receipt counts what each
   * store deleted; `verified` only when RetrievalService was read back by id and held none of the
   * purged documents (otherwise `verificationNote` says why). Another tenant's id: NotFoundError.
   */
  async purge(target: PurgeTarget, call?: CallOptions): Promise<PurgeReceipt> {
    return typed(this.raw.purge(purgeRequest(target), call));
  }

  /** Rebuild RetrievalService's indexes (one agent, or the tenant), yielding progress as it streams. */
  async *reindex(options: { agentId?: string; batchSize?: number } = {}, call?: CallOptions): AsyncGenerator<ReindexProgress> {
    try {
      yield* this.raw.reindex({ agentId: options.agentId ?? "", batchSize: options.batchSize ?? 0 }, call);
    } catch (thrown) {
      throw toStrataError(thrown);
    }
  }
}
