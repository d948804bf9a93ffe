/**
 * Offline stand-in for the social data service: deterministic, plausible data for every
 * operation of spec §4.4 (same operation and input → same answer), with stable cursor paging.
 *
 * Test hooks: when any string field of the input (username, query, mention…) is
 * - "sandbox-timeout": the read fails with ReadFailure('timeout') (after honouring an abort first),
 *   to exercise the 504 path without waiting for a real timeout;
 * - "sandbox-malformed": the answer violates the output schema (no `summary`), to exercise the
 *   caller's validation (502, nothing charged).
 */
import { ReadFailure } from '../../core/read-failure.ts';
import { networkA } from './sandbox/networks-a.ts';
import { networkB } from './sandbox/networks-b.ts';
import { random, seedOf, stableJson } from './sandbox/random.ts';
import { drawTotal, type Input, type ListSpec, type Spec, subjectOf } from './sandbox/spec.ts';
import type { SocialProvider } from './types.ts';

const specs: Record<string, Spec> = { ...networkA, ...networkB };

/** The operations the sandbox answers (the catalog test checks they are exactly the catalog's). */
export const sandboxOperations: readonly string[] = Object.keys(specs);

/** Items per upstream page of a paged list (undefined otherwise), so the catalog test can prove quotes and sandbox pages agree. */
export const sandboxPageSize = (operation: string): number | undefined => {
  const spec = Object.hasOwn(specs, operation) ? specs[operation] : undefined;
  return spec?.kind === 'list' && spec.sizeField ? spec.pageSize : undefined;
};

/** Cursors are opaque to callers; this one is just the offset, tagged so a foreign cursor is refused. */
const CURSOR = /^sbx1\.(\d{1,6})$/;
const encodeCursor = (offset: number) => `sbx1.${offset}`;

export class SandboxSocialProvider implements SocialProvider {
  readonly name = 'sandbox' as const;

  async read(operation: string, input: unknown, options: { signal: AbortSignal; maxPages: number }): Promise<{ result: unknown; pages: number }> {
    options.signal.throwIfAborted();
    const spec = Object.hasOwn(specs, operation) ? specs[operation] : undefined;
    if (!spec) throw new ReadFailure('failed', `sandbox: unknown social operation ${operation}`);
    const fields: Input = input && typeof input === 'object' ? (input as Input) : {};
    const hooks = Object.values(fields);
    if (hooks.includes('sandbox-timeout')) throw new ReadFailure('timeout', `sandbox: ${operation} timed out (test hook)`);
    const network = operation.split('_')[0]!;
    const maxPages = Math.max(1, Math.floor(options.maxPages));
    const answer = spec.kind === 'one' ? this.one(spec, operation, fields, network, maxPages) : this.list(spec, operation, fields, network, maxPages);
    if (hooks.includes('sandbox-malformed')) {
      const { summary: _dropped, ...rest } = answer.result;
      return { result: rest, pages: answer.pages };
    }
    return answer;
  }

  private one(spec: Extract<Spec, { kind: 'one' }>, operation: string, input: Input, network: string, maxPages: number) {
    const data = spec.make(random(seedOf(operation, stableJson(input))), input, network);
    return { result: { summary: spec.summary(data, input), ...data }, pages: Math.min(spec.pages ?? 1, maxPages) };
  }

  /**
   * Items are drawn by their position in the whole list (seeded by the input without paging
   * fields), so page two of 20 is exactly items 20–39 of a read of 40.
   */
  private list(spec: ListSpec, operation: string, input: Input, network: string, maxPages: number) {
    const { cursor, count: _count, limit: _limit, ...subject } = input;
    const key = stableJson(subject);
    const total = drawTotal(random(seedOf(operation, key, 'total')), spec.total);
    let offset = 0;
    if (typeof cursor === 'string') {
      const match = CURSOR.exec(cursor);
      if (!match) throw new ReadFailure('refused', 'cursor: not a cursor this service issued (pass next_cursor unchanged)');
      offset = Number(match[1]);
    }
    const wanted = spec.sizeField && typeof input[spec.sizeField] === 'number' ? (input[spec.sizeField] as number) : spec.pageSize;
    const take = Math.max(0, Math.min(wanted, maxPages * spec.pageSize, total - offset));
    const items = Array.from({ length: take }, (_, i) => spec.item(random(seedOf(operation, key, offset + i)), input, network, offset + i));
    const end = offset + take;
    const next = end < total && spec.sizeField ? encodeCursor(end) : null;
    const summary = `Sandbox data: ${items.length} ${spec.noun} for ${subjectOf(input)}${next ? ' (more available)' : ''}`;
    return { result: { summary, items, next_cursor: next }, pages: Math.min(maxPages, Math.max(1, Math.ceil(take / spec.pageSize))) };
  }
}
