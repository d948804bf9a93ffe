/**
 * A metered read: one declaration per operation (a social lookup, a web search, a page read) that
 * produces its route, its quote route, its OpenAPI entry and its catalog descriptor. The
 * machinery around it (./accept.ts, ./settle.ts, the `metering.call` job) holds the quote,
 * performs the read on a worker and captures exactly what it cost.
 */
import type { z } from '../core/zod.ts';
import type { ReadOperation } from '../platform/read-operation.ts';

export { networks } from '../platform/read-operation.ts';
export type { Network, PerformContext, PriceModel, ReadOperation, ReadOutcome } from '../platform/read-operation.ts';

/** Identity with inference: `defineReadOperation({...})` keeps each operation's own input and output types. */
export const defineReadOperation = <I extends z.ZodType, O extends z.ZodType>(operation: ReadOperation<I, O>): ReadOperation<I, O> => operation;

/** The credit ceiling of a read with this input. */
export const quoteOf = (operation: ReadOperation, input: unknown): { credits: number; pages: number } => {
  const pages = Math.max(1, Math.floor(operation.maxPages(input)));
  return { credits: operation.price.per_request + operation.price.per_page * pages, pages };
};

/** What a finished read costs: the pages it fetched, never more than were quoted. */
export const chargeOf = (operation: ReadOperation, quotedPages: number, fetchedPages: number): number =>
  operation.price.per_request + operation.price.per_page * Math.min(Math.max(0, Math.floor(fetchedPages)), quotedPages);
