/**
 * The contract of a metered read (a social lookup, a web search, a page read), declared here with
 * the other ports of Deps so that this layer depends on no domain: Deps.reads holds them by name.
 * Declarations, quotes and charges live in src/metering (./operation.ts there).
 */
import type { z } from 'zod';
import type { Deps } from './deps.ts';

export const networks = ['net1', 'net2', 'net3', 'net4', 'net5', 'net6', 'net7'] as const;
export type Network = (typeof networks)[number];

/**
 * What a read costs: `per_request` for the call, plus `per_page` for each result page the
 * provider fetched. The quote (the credit ceiling held before the read) counts every page the
 * input allows (`maxPages`); the charge counts the pages actually fetched, so it never exceeds it.
 */
export interface PriceModel {
  per_request: number;
  per_page: number;
}

export interface PerformContext {
  deps: Deps;
  /** Aborted when the read is canceled, times out or the worker stops. */
  signal: AbortSignal;
  /** The most pages this read may fetch (what was quoted). */
  maxPages: number;
}

/** What a provider reports: the result (validated against `output` by the caller) and how many pages it fetched (≥ 1). */
export interface ReadOutcome {
  result: unknown;
  pages: number;
}

export interface ReadOperation<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  /** `<network>_<suffix>` (spec §4.4), `resolve_mention`, `search`, `read_url`. */
  name: string;
  network?: Network;
  /** One or two sentences for a person or an agent choosing a tool. */
  description: string;
  /** A strict zod object; its JSON Schema is the descriptor's `input_schema`. */
  input: I;
  /** A zod object with `summary: string` (a one-line result for the reader); its JSON Schema is `output_schema`. */
  output: O;
  price: PriceModel;
  /** Pages the quote counts for this input (1 for a single lookup; e.g. ceil(count / page size) for lists). */
  maxPages(input: z.output<I>): number;
  /** Calls the provider. Throws `ReadFailure` (src/core/read-failure.ts) for provider errors and timeouts. */
  perform(input: z.output<I>, context: PerformContext): Promise<ReadOutcome>;
}
