/**
 * One gRPC transport (HTTP/2, @connectrpc/connect-node) carrying Strata's metadata on every call:
 * the API key ("authorization: Bearer <key>"), the tenant ("x-strata-tenant", used when auth is off)
 * and any extra headers; TLS with a custom CA and a client certificate (mTLS) when asked.
 */
import type { Interceptor, Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

export interface TlsOptions {
  /** PEM of the CA that signed the server's certificate (default: the system's roots). */
  readonly ca?: string | Buffer;
  /** PEM client certificate and key, for servers that require mTLS. */
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  /** The name the server's certificate must carry, when it differs from the target's host. */
  readonly serverName?: string;
}

export interface StrataOptions {
  /** "host:port" (plaintext unless `tls` is set) or a URL "http://host:port" / "https://host:port". */
  readonly target: string;
  /** Sent as "authorization: Bearer <apiKey>". */
  readonly apiKey?: string;
  /** Sent as "x-strata-tenant"; with API keys on, the key decides the tenant and this must match. */
  readonly tenant?: string;
  /** true: TLS with the system's roots; an object: TLS with these files. */
  readonly tls?: boolean | TlsOptions;
  /** Deadline of each call unless the call sets its own (milliseconds). */
  readonly timeoutMs?: number;
  /** Extra metadata on every call (for example "x-request-id"). */
  readonly headers?: Readonly<Record<string, string>>;
}

export const TENANT_HEADER = "x-strata-tenant";
export const REQUEST_ID_HEADER = "x-request-id";

function baseUrl(options: StrataOptions): string {
  if (/^https?:\/\//.test(options.target)) return options.target;
  return `${options.tls ? "https" : "http"}://${options.target}`;
}

function metadata(options: StrataOptions): Interceptor {
  return (next) => async (request) => {
    if (options.apiKey !== undefined) request.header.set("authorization", `Bearer ${options.apiKey}`);
    if (options.tenant !== undefined) request.header.set(TENANT_HEADER, options.tenant);
    for (const [key, value] of Object.entries(options.headers ?? {})) request.header.set(key, value);
    return next(request);
  };
}

export function createStrataTransport(options: StrataOptions): Transport {
  const tls = typeof options.tls === "object" ? options.tls : undefined;
  return createGrpcTransport({
    baseUrl: baseUrl(options),
    interceptors: [metadata(options)],
    defaultTimeoutMs: options.timeoutMs,
    nodeOptions: tls && { ca: tls.ca, cert: tls.cert, key: tls.key, servername: tls.serverName },
  });
}
