import type { Knex } from 'knex';
import { badRequest } from './errors.ts';
import { CHECKED_BY_SERVER, z } from './zod.ts';

/** `limit` (1–100, default 50) and `cursor`, shared by every list operation. */
export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(50).openapi({ description: 'Page size, 1–100.', example: 50 }),
  cursor: z
    .string()
    .min(1)
    .max(512)
    .optional()
    .openapi({
      description: 'Opaque: the `next_cursor` of a previous page of this list, passed on as it is. A value this list did not issue is 400 naming `cursor`.',
      [CHECKED_BY_SERVER]: true,
    }),
};

export const pageOf = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), next_cursor: z.string().nullable() });

export interface SortKey {
  /** Column as written in SQL, e.g. `c.created_at`. */
  column: string;
  direction: 'asc' | 'desc';
  /** Timestamps travel in the cursor as Postgres text, keeping microseconds a JS Date would lose. */
  type?: 'timestamp' | 'text' | 'number';
}

/** Newest first: by `created_at`, then by the unique `id`, both descending (of the table aliased `alias`) — the order of most lists. */
export function newestFirst(alias?: string): readonly SortKey[] {
  const column = (name: string) => (alias ? `${alias}.${name}` : name);
  return [
    { column: column('created_at'), direction: 'desc', type: 'timestamp' },
    { column: column('id'), direction: 'desc' },
  ];
}

export interface Page<Row> {
  items: Row[];
  next_cursor: string | null;
}

/** A page as the API answers it: each row presented, the cursor passed on unchanged. */
export const presentPage = <Row, Item>(page: Page<Row>, present: (row: Row) => Item): Page<Item> => ({
  items: page.items.map(present),
  next_cursor: page.next_cursor,
});

/**
 * Keyset pagination: the query is ordered by `keys` (the last key must be unique, usually the
 * id) and resumed strictly after the last row seen. Rows inserted meanwhile never shift a page,
 * so every row appears exactly once across pages. Directions may be mixed.
 */
export async function paginate<Row extends object>(
  query: Knex.QueryBuilder,
  keys: readonly SortKey[],
  page: { limit: number; cursor?: string | undefined },
): Promise<Page<Row>> {
  const knex = (query as unknown as { client: { raw: Knex['raw'] } }).client;
  if (page.cursor !== undefined) {
    const values = decodeCursor(page.cursor, keys.length);
    query.where((builder) => {
      // (k1 > v1) OR (k1 = v1 AND k2 > v2) OR … — correct for mixed directions, index-friendly.
      keys.forEach((_, i) => {
        builder.orWhere((branch) => {
          for (let j = 0; j < i; j++) branch.whereRaw(`${keys[j]!.column} = ${cast(keys[j]!)}`, [values[j]!]);
          const key = keys[i]!;
          branch.whereRaw(`${key.column} ${key.direction === 'asc' ? '>' : '<'} ${cast(key)}`, [values[i]!]);
        });
      });
    });
  }
  for (const key of keys) query.orderByRaw(`${key.column} ${key.direction}`);
  keys.forEach((key, i) => {
    query.select(knex.raw(`${key.column}${key.type === 'timestamp' ? '::text' : ''} as "__k${i}"`));
  });
  const rows = (await query.limit(page.limit + 1)) as (Row & Record<string, unknown>)[];
  const more = rows.length > page.limit;
  const items = rows.slice(0, page.limit);
  const last = items.at(-1);
  const next_cursor = more && last ? encodeCursor(keys.map((_, i) => last[`__k${i}`])) : null;
  for (const row of items) for (let i = 0; i < keys.length; i++) delete row[`__k${i}`];
  return { items: items as Row[], next_cursor };
}

function cast(key: SortKey): string {
  return key.type === 'timestamp' ? '?::timestamptz' : key.type === 'number' ? '?::numeric' : '?';
}

export function encodeCursor(values: unknown[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

export function decodeCursor(cursor: string, length: number): (string | number)[] {
  try {
    const values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(values) && values.length === length && values.every((v) => ['string', 'number'].includes(typeof v))) return values as (string | number)[];
  } catch {
    // fall through
  }
  throw badRequest('query.cursor: is not a cursor this list issued', ['cursor']);
}
