/**
 * Following next_page_token safely: a server cannot keep the client paging forever. Every listing
 * helper (`everyAgent`, `everyBlock`) pages through `allPages`: a token the server
 * already gave in this listing, or more than `maxPages` pages, ends the listing with PagingError
 * (reason "PAGING_DID_NOT_END") instead of another call. The Python client has the same rule
 * (strata.client.paging).
 */
import { type CallOptions, Code, ConnectError } from "@connectrpc/connect";
import { toStrataError, UnknownError } from "./errors.js";
import type { Agent, Block } from "./gen/strata/memory/v1/resources_pb.js";
import type { MemoryClient } from "./memory.js";

/** Pages one listing may take unless the caller allows more: 10 million items at 1000 a page. */
export const MAX_PAGES = 10_000;

/** The server's pages do not end: a repeated token, or more pages than the client's cap. */
export class PagingError extends UnknownError {
  override readonly reason = "PAGING_DID_NOT_END";

  constructor(message: string) {
    super(new ConnectError(message, Code.Unknown));
  }
}

/** Each page of one listing, fetching `fetch(pageToken)` until a page has no next token. */
export async function* allPages<P extends { readonly nextPageToken: string }>(
  listing: string,
  fetch: (pageToken: string) => Promise<P>,
  maxPages: number = MAX_PAGES,
): AsyncGenerator<P> {
  const seen = new Set<string>([""]);
  let token = "";
  for (let pages = 1; ; pages++) {
    const page = await fetch(token);
    yield page;
    token = page.nextPageToken;
    if (!token) return;
    if (seen.has(token)) {
      throw new PagingError(`${listing}: the server sent page token ${JSON.stringify(token.slice(0, 64))} a second time; stopping instead of paging forever`);
    }
    if (pages >= maxPages) {
      throw new PagingError(`${listing}: more than ${maxPages} pages; stopping (pass a larger maxPages to follow longer listings)`);
    }
    seen.add(token);
  }
}

/** Every agent of the tenant, page after page (at most `maxPages` pages). */
export async function* everyAgent(
  client: MemoryClient,
  options: { pageSize?: number; maxPages?: number } = {},
  call?: CallOptions,
): AsyncGenerator<Agent> {
  const fetch = (pageToken: string) => typed(client.raw.listAgents({ pageSize: options.pageSize ?? 0, pageToken }, call));
  for await (const page of allPages("ListAgents", fetch, options.maxPages)) yield* page.agents;
}

/** Every block of the agent (of the tenant when `agentId` is ""), page after page (at most `maxPages`). */
export async function* everyBlock(
  client: MemoryClient,
  agentId: string,
  options: { pageSize?: number; maxPages?: number } = {},
  call?: CallOptions,
): AsyncGenerator<Block> {
  const fetch = (pageToken: string) =>
    typed(client.raw.listBlocks({ agentId, pageSize: options.pageSize ?? 0, pageToken }, call));
  for await (const page of allPages("ListBlocks", fetch, options.maxPages)) yield* page.blocks;
}

async function typed<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (thrown) {
    throw toStrataError(thrown);
  }
}
