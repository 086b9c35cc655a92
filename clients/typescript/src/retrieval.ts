/** RetrievalClient: search and stats over RetrievalService (usually called by MemoryService itself). */
import { type CallOptions, type Client, createClient, type Transport } from "@connectrpc/connect";
import { toStrataError } from "./errors.js";
import {
  type DocumentFilter,
  RetrievalService,
  type SearchHit,
  SearchMode,
  type StatsResponse,
} from "./gen/strata/retrieval/v1/retrieval_pb.js";
import { createStrataTransport, type StrataOptions } from "./transport.js";

export { SearchMode as RetrievalSearchMode };

/** DocumentFilter's fields as a plain object; tenantId is required. */
export type FilterInit = Partial<Omit<DocumentFilter, "$typeName" | "$unknown">>;

export class RetrievalClient {
  readonly raw: Client<typeof RetrievalService>;

  constructor(options: StrataOptions | Transport) {
    const transport = "target" in options ? createStrataTransport(options) : options;
    this.raw = createClient(RetrievalService, transport);
  }

  async search(query: string, filter: FilterInit, options: { mode?: SearchMode; topK?: number } = {}, call?: CallOptions): Promise<SearchHit[]> {
    try {
      const response = await this.raw.search({ query, filter, mode: options.mode ?? SearchMode.HYBRID, topK: options.topK ?? 10 }, call);
      return response.hits;
    } catch (thrown) {
      throw toStrataError(thrown);
    }
  }

  async stats(filter: FilterInit, call?: CallOptions): Promise<StatsResponse> {
    try {
      return await this.raw.stats({ filter }, call);
    } catch (thrown) {
      throw toStrataError(thrown);
    }
  }
}
