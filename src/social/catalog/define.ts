/**
 * The two kinds of social operation (a single lookup, a paged list) built the same way, so each
 * network file only states what differs: name, description, schemas, price and page size.
 */
import { z } from '../../core/zod.ts';
import { DEFAULT_COUNT } from './shapes.ts';
import { defineReadOperation, type Network, type PerformContext, type PriceModel, type ReadOperation } from '../../metering/index.ts';

/** Lookups fetch exactly one upstream page, so they charge the call and nothing per page. */
export const LOOKUP_PRICE: PriceModel = { per_request: 1, per_page: 0 };
/** Lists charge the call and each upstream page. */
export const LIST_PRICE: PriceModel = { per_request: 1, per_page: 1 };
/** Search pages are costlier upstream (ranking, no cache), hence the higher per-page price. */
export const SEARCH_PRICE: PriceModel = { per_request: 1, per_page: 2 };

const perform =
  (name: string) =>
  (input: unknown, { deps, signal, maxPages }: PerformContext) =>
    deps.providers.social.read(name, input, { signal, maxPages });

interface Common<I extends z.ZodObject, O extends z.ZodObject> {
  name: string;
  network?: Network;
  description: string;
  input: I;
  output: O;
  price?: PriceModel;
}

export const lookup = <I extends z.ZodObject, O extends z.ZodObject>(spec: Common<I, O>): ReadOperation<I, O> =>
  defineReadOperation({ ...spec, price: spec.price ?? LOOKUP_PRICE, maxPages: () => 1, perform: perform(spec.name) });

/**
 * A list of up to `input[sizeField]` items that the upstream serves `pageSize` at a time: the
 * quote counts every page that many items can take; without a size field it is `pages` pages.
 */
export const list = <I extends z.ZodObject, O extends z.ZodObject>(
  spec: Common<I, O> & ({ pageSize: number; sizeField: 'count' | 'limit' } | { pages?: number }),
): ReadOperation<I, O> => {
  const { pageSize, sizeField, pages = 1, ...rest } = { pageSize: 1, sizeField: undefined, pages: undefined, ...spec };
  return defineReadOperation({
    ...rest,
    price: spec.price ?? LIST_PRICE,
    maxPages: (input) => {
      if (!sizeField) return pages;
      const size = (input as Record<string, unknown>)[sizeField];
      return Math.max(1, Math.ceil((typeof size === 'number' ? size : DEFAULT_COUNT) / pageSize));
    },
    perform: perform(spec.name),
  });
};

/**
 * Exactly one of `keys` must be given (e.g. a post by `post_id` or by `url`). The issue names the
 * first key, so a 400 points at a field; `eitherOf` declares the same rule as a `oneOf`.
 */
export const exactlyOne =
  (keys: readonly string[]) =>
  (value: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    const given = keys.filter((key) => value[key] !== undefined);
    if (given.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: [given[1] ?? keys[0]!],
        message: given.length === 0 ? `give one of ${keys.join(', ')}` : `give only one of ${keys.join(', ')}`,
      });
    }
  };

/** A strict input in which exactly one of `keys` names the subject (e.g. `post_id` or `url`). */
export const eitherOf = <S extends z.ZodRawShape>(shape: S, keys: readonly (keyof S & string)[]) =>
  z
    .strictObject(shape)
    .superRefine(exactlyOne(keys))
    .openapi({ oneOf: keys.map((key) => ({ required: [key] })) });
