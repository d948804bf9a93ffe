import type { Knex } from 'knex';
import { badRequest, unavailable } from '../core/errors.ts';
import { paginate, type Page } from '../core/pagination.ts';
import { BOSS_SCHEMA } from '../jobs/boss.ts';
import type { JobFilter } from './schema.ts';

// Every read of pg-boss's job table for the console. The table holds millions of rows, so each
// list is bounded by a time window on created_on and paged by keyset over (created_on, id) — the
// order of the console indexes (src/jobs/job-table.ts) — and each query runs under the console's
// statement timeout.

export interface JobRow {
  id: string;
  name: string;
  state: 'created' | 'retry' | 'active' | 'completed' | 'cancelled' | 'failed';
  group_id: string | null;
  data: Record<string, unknown> | null;
  output: unknown;
  retry_count: number;
  retry_limit: number;
  priority: number;
  created_on: Date;
  start_after: Date;
  started_on: Date | null;
  completed_on: Date | null;
  dead_letter: string | null;
  source_name: string | null;
  source_id: string | null;
}

const columns = [
  'id',
  'name',
  'state',
  'group_id',
  'data',
  'output',
  'retry_count',
  'retry_limit',
  'priority',
  'created_on',
  'start_after',
  'started_on',
  'completed_on',
  'dead_letter',
  'source_name',
  'source_id',
];

const JOB = `${BOSS_SCHEMA}.job`;
const keyset = [
  { column: 'created_on', direction: 'desc', type: 'timestamp' },
  { column: 'id', direction: 'desc' },
] as const;

export const MAX_WINDOW_DAYS = 31;

/** The filter's time window: default the 24 hours before `to` (default now); at most 31 days. */
export function windowOf(filter: Pick<JobFilter, 'from' | 'to'>, now = new Date()): { from: Date; to: Date } {
  const to = filter.to ? new Date(filter.to) : now;
  const from = filter.from ? new Date(filter.from) : new Date(to.getTime() - 24 * 3600_000);
  if (from >= to) throw badRequest('from: must be before to', ['from']);
  if (to.getTime() - from.getTime() > MAX_WINDOW_DAYS * 24 * 3600_000) throw badRequest(`from: the window may span at most ${MAX_WINDOW_DAYS} days`, ['from']);
  return { from, to };
}

/**
 * Runs `work` in a read-only transaction under the console's statement timeout; a query the
 * timeout ends answers 503 naming what to narrow, instead of holding the database.
 */
export async function withinTimeout<T>(db: Knex, timeoutMs: number, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  try {
    return await db.transaction(
      async (trx) => {
        await trx.raw(`SET LOCAL statement_timeout = ${Math.floor(timeoutMs)}`);
        return work(trx);
      },
      { readOnly: true },
    );
  } catch (error) {
    if ((error as { code?: string }).code === '57014')
      throw unavailable(`the query ran past the console's statement timeout (${timeoutMs} ms): narrow the time window or add filters`);
    throw error;
  }
}

/**
 * The jobs a filter matches, as a query builder. `resource_id` matches any field a job type
 * declared searchable (each indexed); the other filters are columns or the indexed request id.
 */
export function matching(db: Knex | Knex.Transaction, filter: JobFilter, window: { from: Date; to: Date } | null, searchable: readonly string[]) {
  const query = db(JOB);
  if (window) query.where('created_on', '>=', window.from).where('created_on', '<', window.to);
  if (filter.queue) query.where('name', filter.queue);
  if (filter.state) query.where('state', filter.state);
  if (filter.organization_id) query.where('group_id', filter.organization_id);
  // `\\?` is knex's escape for jsonb's `?`; the containment test lets the planner use the partial indexes.
  if (filter.request_id) query.whereRaw(`data \\? '$request_id' AND data->>'$request_id' = ?`, [filter.request_id]);
  if (filter.resource_id) {
    const id = filter.resource_id;
    if (searchable.length === 0) query.whereRaw('false');
    else
      query.where((any) => {
        for (const field of searchable) any.orWhereRaw(`(data \\? '${field}' AND data->>'${field}' = ?)`, [id]);
      });
  }
  return query;
}

export async function listJobs(
  trx: Knex.Transaction,
  filter: JobFilter,
  window: { from: Date; to: Date } | null,
  searchable: readonly string[],
  page: { limit: number; cursor?: string | undefined },
): Promise<Page<JobRow>> {
  return paginate<JobRow>(matching(trx, filter, window, searchable).select(columns), keyset, page);
}

/** The planner's estimate of the rows a filter matches: instant at any size (EXPLAIN, nothing runs). */
export async function estimateJobs(trx: Knex.Transaction, filter: JobFilter, window: { from: Date; to: Date } | null, searchable: readonly string[]) {
  // knex's compiled SQL keeps its `?` placeholders and `\\?` escapes, so it can be wrapped in another raw statement as it is.
  const { sql, bindings } = matching(trx, filter, window, searchable).select(trx.raw('1')).toSQL();
  const { rows } = await trx.raw(`EXPLAIN (FORMAT JSON) ${sql}`, bindings as readonly Knex.Value[]);
  return Math.round(Number(rows[0]['QUERY PLAN'][0].Plan['Plan Rows'] ?? 0));
}

export async function countJobs(trx: Knex.Transaction, filter: JobFilter, window: { from: Date; to: Date } | null, searchable: readonly string[]) {
  const [row] = await matching(trx, filter, window, searchable).count<{ n: string }[]>('* as n');
  return Number(row!.n);
}

export async function findJob(db: Knex | Knex.Transaction, id: string): Promise<JobRow | undefined> {
  return (await db(JOB).where({ id }).first(columns)) as JobRow | undefined;
}

/** Jobs by id, all at once (bulk actions, lookups). */
export async function findJobs(db: Knex | Knex.Transaction, ids: readonly string[]): Promise<JobRow[]> {
  if (ids.length === 0) return [];
  return (await db(JOB).whereIn('id', ids).select(columns)) as JobRow[];
}
