/**
 * Failed calls as typed errors: the gRPC status code picks the class, and the google.rpc details the
 * server attaches (trailer "grpc-status-details-bin") give the reason, metadata and bad fields.
 * The same shape as the Python client's strata.client.errors.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";

/** ErrorInfo.domain of every reason Strata sends. */
export const ERROR_DOMAIN = "strata.dev";

export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

/** A failed call. `reason` is a name from the API's ErrorReason enum (docs/errors.md). */
export class StrataError extends Error {
  readonly code: Code;
  /** ErrorInfo.reason, e.g. "ETAG_MISMATCH"; "" when the server sent no ErrorInfo. */
  readonly reason: string;
  readonly domain: string;
  /** ErrorInfo.metadata: the keys each reason documents. */
  readonly metadata: Readonly<Record<string, string>>;
  /** BadRequest.field_violations: which request fields are wrong. */
  readonly fieldViolations: readonly FieldViolation[];
  /** The server's x-request-id for this call, to find it in the logs. */
  readonly requestId: string | undefined;

  constructor(cause: ConnectError) {
    super(cause.rawMessage, { cause });
    this.name = new.target.name;
    this.code = cause.code;
    const info = cause.findDetails(ErrorInfoSchema)[0];
    this.reason = info?.reason ?? "";
    this.domain = info?.domain ?? "";
    this.metadata = { ...(info?.metadata ?? {}) };
    this.fieldViolations = cause
      .findDetails(BadRequestSchema)
      .flatMap((bad) => bad.fieldViolations.map((v) => ({ field: v.field, description: v.description })));
    this.requestId = cause.metadata.get("x-request-id") ?? undefined;
  }
}

export class CancelledError extends StrataError {}
export class UnknownError extends StrataError {}
export class InvalidArgumentError extends StrataError {}
export class DeadlineExceededError extends StrataError {}
export class NotFoundError extends StrataError {}
export class AlreadyExistsError extends StrataError {}
export class PermissionDeniedError extends StrataError {}
export class ResourceExhaustedError extends StrataError {}
export class FailedPreconditionError extends StrataError {}
export class AbortedError extends StrataError {}
export class OutOfRangeError extends StrataError {}
export class UnimplementedError extends StrataError {}
export class InternalError extends StrataError {}
export class UnavailableError extends StrataError {}
export class DataLossError extends StrataError {}
export class UnauthenticatedError extends StrataError {}

const CLASSES: Record<Code, new (cause: ConnectError) => StrataError> = {
  [Code.Canceled]: CancelledError,
  [Code.Unknown]: UnknownError,
  [Code.InvalidArgument]: InvalidArgumentError,
  [Code.DeadlineExceeded]: DeadlineExceededError,
  [Code.NotFound]: NotFoundError,
  [Code.AlreadyExists]: AlreadyExistsError,
  [Code.PermissionDenied]: PermissionDeniedError,
  [Code.ResourceExhausted]: ResourceExhaustedError,
  [Code.FailedPrecondition]: FailedPreconditionError,
  [Code.Aborted]: AbortedError,
  [Code.OutOfRange]: OutOfRangeError,
  [Code.Unimplemented]: UnimplementedError,
  [Code.Internal]: InternalError,
  [Code.Unavailable]: UnavailableError,
  [Code.DataLoss]: DataLossError,
  [Code.Unauthenticated]: UnauthenticatedError,
};

/** The typed error for anything a call threw (a ConnectError, or anything else wrapped as UNKNOWN). */
export function toStrataError(thrown: unknown): StrataError {
  if (thrown instanceof StrataError) return thrown;
  const cause = ConnectError.from(thrown);
  return new CLASSES[cause.code](cause);
}
