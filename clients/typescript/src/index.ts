/** Strata's TypeScript client: typed helpers, typed errors, and the generated stubs underneath. */
export * from "./errors.js";
export * from "./memory.js";
export * from "./paging.js";
export * from "./purge.js";
export * from "./retrieval.js";
export * from "./transport.js";
export { ErrorReason as MemoryErrorReason } from "./gen/strata/memory/v1/errors_pb.js";
export { ErrorReason as RetrievalErrorReason } from "./gen/strata/retrieval/v1/errors_pb.js";
export { ErrorReason as AdminErrorReason } from "./gen/strata/admin/v1/errors_pb.js";
