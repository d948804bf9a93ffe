import type { Knex } from 'knex';

/** A case-insensitive substring pattern for `lower(col) LIKE ?`: `%`, `_` and `\` in the text match literally. */
export const likePattern = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Rows where any of `columns` (trusted SQL, e.g. `a.title`) contains `text`, ignoring case. */
export function whereContains<Q extends Knex.QueryBuilder>(query: Q, columns: readonly string[], text: string): Q {
  const pattern = likePattern(text);
  return query.where((any) => {
    for (const column of columns) any.orWhereRaw(`lower(${column}) LIKE ?`, [pattern]);
  }) as Q;
}
