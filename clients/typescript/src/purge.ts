/**
 * Forgetting with a receipt: what `MemoryClient.purge` targets, and the request naming it. A purge
 * deletes one agent (everything of it), block (with its whole history), passage, message or
 * conversation with every stored copy of its content, and cannot be undone.
 */
import { create } from "@bufbuild/protobuf";
import { type PurgeRequest, PurgeRequestSchema } from "./gen/strata/memory/v1/memory_service_pb.js";

/** One target: a resource by id, or a conversation of an agent (`agentId` with `conversationId`). */
export type PurgeTarget =
  | { readonly agentId: string; readonly conversationId?: undefined }
  | { readonly blockId: string }
  | { readonly passageId: string }
  | { readonly messageId: string }
  | { readonly agentId: string; readonly conversationId: string };

/** The PurgeRequest naming `target`. */
export function purgeRequest(target: PurgeTarget): PurgeRequest {
  if ("conversationId" in target && target.conversationId !== undefined) {
    const conversation = { agentId: target.agentId, conversationId: target.conversationId };
    return create(PurgeRequestSchema, { target: { case: "conversation", value: conversation } });
  }
  if ("blockId" in target) return create(PurgeRequestSchema, { target: { case: "blockId", value: target.blockId } });
  if ("passageId" in target) return create(PurgeRequestSchema, { target: { case: "passageId", value: target.passageId } });
  if ("messageId" in target) return create(PurgeRequestSchema, { target: { case: "messageId", value: target.messageId } });
  return create(PurgeRequestSchema, { target: { case: "agentId", value: target.agentId } });
}
