import type { Knex } from 'knex';
import { badRequest } from '../../core/errors.ts';
import { decodeCursor, encodeCursor, type Page } from '../../core/pagination.ts';
import { BOSS_SCHEMA } from '../boss.ts';
import { jobOfOrganizationSql } from '../origin.ts';
import { type Liveness, stuckCondition } from './running.ts';

// The console's reads of pg-boss's job table. It holds millions of rows, so every list is bounded by
// a time window on created_on (or an indexed request / resource id) and paged by keyset over
// (created_on, id): the order of the console indexes (./tables.ts).

const JOB = `${BOSS_SCHEMA}.job`;
// A cursor's parts as Postgres prints them, checked so a forged cursor is a 400 rather than a cast error.
const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}(:\d{2}){0,2}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type JobState = 'created' | 'retry' | 'active' | 'completed' | 'cancelled' | 'failed';

/** A job as the console shows it: the columns of pgboss.job it reads (JOB_COLUMNS). */
export interface JobRow {
  id: string;
  name: string;
  state: JobState;
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

export const JOB_COLUMNS = [
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
] as const satisfies readonly (keyof JobRow)[];

/** Which jobs: the console's filter, plus what a bulk action narrows it to. */
export interface JobSelection {
  queue?: string | undefined;
  state?: JobState | undefined;
  organization_id?: string | undefined;
  request_id?: string | undefined;
  resource_id?: string | undefined;
  /** Only these states (a bulk action's actionable states, when no `state` is given). */
  states?: readonly JobState[] | undefined;
  /** Dead letters only (a redrive) or none (retry, cancel), when no `queue` is given. */
  deadLetters?: 'only' | 'excluded' | undefined;
  /** Only stuck attempts: running past their kind's expected time on a worker that is live by this measure. */
  stuck?: Liveness | undefined;
  /**
   * Whose jobs: `work` (neither pg-boss's internal queues nor the platform's cron jobs), `cron` (the
   * queues in `cronQueues`: what pg-boss's schedules send), `internal` (pg-boss's own queues).
   */
  queueOrigin?: { kind: 'work' | 'cron' | 'internal'; cronQueues: readonly string[] } | undefined;
}

/** pg-boss names its own queues with this prefix (`__pgboss__send-it`: the cron schedules' sender). */
export const INTERNAL_QUEUE_PREFIX = '__pgboss__';
export const isInternalQueue = (name: string) => name.startsWith(INTERNAL_QUEUE_PREFIX);
// LIKE pattern of the prefix (its underscores escaped).
const INTERNAL_LIKE = `'${INTERNAL_QUEUE_PREFIX.replaceAll('_', '\\_')}%'`;

export interface JobWindow {
  from: Date;
  to: Date;
}

/** Payload fields a job type declared searchable (each indexed on the job table). */
type Searchable = readonly string[];

/**
 * The jobs a selection matches, as a query builder. `resource_id` matches any field a job type
 * declared searchable (each indexed); the other filters are columns or the indexed request id.
 */
function matching(db: Knex | Knex.Transaction, selection: JobSelection, window: Partial<JobWindow> | null, searchable: Searchable) {
  const query = db(JOB);
  if (window?.from) query.where('created_on', '>=', window.from);
  if (window?.to) query.where('created_on', '<', window.to);
  if (selection.queue) query.where('name', selection.queue);
  if (selection.state) query.where('state', selection.state);
  else if (selection.states) query.whereIn('state', selection.states);
  if (selection.organization_id) query.whereRaw(jobOfOrganizationSql(), [selection.organization_id, selection.organization_id]);
  // `\\?` is knex's escape for jsonb's `?`; the containment test lets the planner use the partial indexes.
  // The ids first (a probe of the request index), then the rows by primary key, as for a resource id
  // below: as a filter in the page query, the planner walks created_on newest-first at 1M jobs (every
  // job has a request id, so it guesses thousands per id), 0.5 s for a request of one job.
  if (selection.request_id)
    query.whereRaw(`id = ANY (ARRAY(SELECT id FROM ${JOB} WHERE data \\? '$request_id' AND data->>'$request_id' = ?))`, [selection.request_id]);
  if (selection.resource_id) {
    const id = selection.resource_id;
    if (searchable.length === 0) query.whereRaw('false');
    else {
      // The ids first, one probe of each field's partial index, then the rows by primary key. An OR of
      // the fields in the page query itself lets the planner walk the created_on index newest-first,
      // filtering every job until it has a page: a scan of the table when the resource has few jobs.
      const probes = searchable.map((field) => `SELECT id FROM ${JOB} WHERE data \\? '${field}' AND data->>'${field}' = ?`).join(' UNION ALL ');
      query.whereRaw(
        `id = ANY (ARRAY(${probes}))`,
        searchable.map(() => id),
      );
    }
  }
  if (selection.stuck) {
    // `state = 'active'` on the outer query too, so the planner reaches the few running jobs through the active index.
    const stuck = stuckCondition(selection.stuck);
    query.where('state', 'active').whereRaw(stuck.sql, stuck.bindings);
  }
  if (selection.queueOrigin) {
    // Conditions on `name`: the created_on index walk filters them as it goes; a queue list is also a name-index probe.
    const { kind, cronQueues } = selection.queueOrigin;
    if (kind === 'internal') query.whereRaw(`name LIKE ${INTERNAL_LIKE}`);
    else if (kind === 'cron') query.whereIn('name', cronQueues.length ? cronQueues : ['']);
    else {
      query.whereRaw(`name NOT LIKE ${INTERNAL_LIKE}`);
      if (cronQueues.length) query.whereNotIn('name', cronQueues);
    }
  }
  // Dead letters are queued jobs nobody works: only a redrive takes them; retry and cancel leave them alone.
  if (!selection.queue && selection.deadLetters) query.whereRaw(selection.deadLetters === 'only' ? `name LIKE '%.dead'` : `name NOT LIKE '%.dead'`);
  return query;
}

/**
 * One page, newest first, resumed after `page.cursor` by a row comparison `(created_on, id) < (…)`:
 * the planner starts the (…, created_on DESC, id DESC) index scan at the cursor, so a page deep in a
 * million jobs costs what page 1 does (paginate()'s OR chain, right for mixed directions, makes it
 * read every row before the cursor). The cursor is created_on as Postgres text (microseconds) and id.
 */
export async function listJobRows(
  trx: Knex.Transaction,
  selection: JobSelection,
  window: JobWindow | null,
  searchable: Searchable,
  page: { limit: number; cursor?: string | undefined },
): Promise<Page<JobRow>> {
  // Past page 1 the cursor is the upper bound (it lies inside the window): kept beside `created_on < to`,
  // the B-tree would start its backward walk at `to` and filter its way down to the cursor, rows deep.
  const bounds = window && page.cursor !== undefined ? { from: window.from } : window;
  const query = matching(trx, selection, bounds, searchable).select(JOB_COLUMNS).select(trx.raw('created_on::text AS __created'));
  if (page.cursor !== undefined) {
    const [created, id] = decodeCursor(page.cursor, 2);
    if (!UUID.test(String(id)) || !TIMESTAMP.test(String(created))) throw badRequest('query.cursor: is not a cursor this list issued', ['cursor']);
    query.whereRaw('(created_on, id) < (?::timestamptz, ?::uuid)', [String(created), String(id)]);
  }
  const rows = (await query.orderByRaw('created_on DESC, id DESC').limit(page.limit + 1)) as (JobRow & { __created?: string })[];
  const items = rows.slice(0, page.limit);
  const last = items.at(-1);
  const next_cursor = rows.length > page.limit && last ? encodeCursor([last.__created, last.id]) : null;
  for (const row of items) delete row.__created;
  return { items, next_cursor };
}

/** The planner's estimate of the rows a selection matches: instant at any size (EXPLAIN, nothing runs). */
export async function estimateJobRows(trx: Knex.Transaction, selection: JobSelection, window: JobWindow | null, searchable: Searchable): Promise<number> {
  // knex's compiled SQL keeps its `?` placeholders and `\\?` escapes, so it can be wrapped in another raw statement as it is.
  const { sql, bindings } = matching(trx, selection, window, searchable).select(trx.raw('1')).toSQL();
  const { rows } = await trx.raw(`EXPLAIN (FORMAT JSON) ${sql}`, bindings as readonly Knex.Value[]);
  return Math.round(Number(rows[0]['QUERY PLAN'][0].Plan['Plan Rows'] ?? 0));
}

/**
 * Counts the matching rows up to `cap`, newest first through the same index the page walks (so it
 * costs at most `cap` index entries), and returns the created_on of the last one counted: when the
 * cap is reached, how far back the newest `cap` rows reach (the density an estimate extrapolates).
 */
export async function countJobRowsUpTo(
  trx: Knex.Transaction,
  selection: JobSelection,
  window: JobWindow | null,
  searchable: Searchable,
  cap: number,
): Promise<{ n: number; reach: Date | null }> {
  const { sql, bindings } = matching(trx, selection, window, searchable).select('created_on').orderByRaw('created_on DESC, id DESC').limit(cap).toSQL();
  const { rows } = await trx.raw(`SELECT count(*)::int AS n, min(created_on) AS reach FROM (${sql}) counted`, bindings as readonly Knex.Value[]);
  return { n: rows[0].n as number, reach: (rows[0].reach as Date | null) ?? null };
}

/** The job table as Postgres's activity statistics see it now (its partitions summed). */
export interface JobTableStatistics {
  /** Live rows (n_live_tup: kept current by every insert and delete, unlike the planner's statistics, which wait for ANALYZE). */
  rows: number;
  /** Rows inserted, updated or deleted since the last ANALYZE (n_mod_since_analyze): what the planner has not seen. */
  modified: number;
}

/**
 * How many rows the job table holds now, and how many changed since the planner last looked: the
 * ceiling of any estimate of a part of it, and how far a planner's estimate can lag behind it.
 */
export async function jobTableStatistics(trx: Knex.Transaction): Promise<JobTableStatistics> {
  const { rows } = await trx.raw(
    `SELECT coalesce(sum(s.n_live_tup), 0)::bigint AS rows, coalesce(sum(s.n_mod_since_analyze), 0)::bigint AS modified
       FROM pg_stat_user_tables s
      WHERE s.relid IN (SELECT i.inhrelid FROM pg_inherits i WHERE i.inhparent = ?::regclass) OR s.relid = ?::regclass`,
    [JOB, JOB],
  );
  return { rows: Number(rows[0].rows), modified: Number(rows[0].modified) };
}

export async function countJobRows(trx: Knex.Transaction, selection: JobSelection, window: JobWindow | null, searchable: Searchable): Promise<number> {
  const [row] = await matching(trx, selection, window, searchable).count<{ n: string }[]>('* as n');
  return Number(row!.n);
}

/** What a bulk action would take: how many per queue, most first, and the newest `sampleSize`. */
export async function previewJobRows(
  trx: Knex.Transaction,
  selection: JobSelection,
  window: JobWindow,
  searchable: Searchable,
  sampleSize: number,
): Promise<{ byQueue: { queue: string; count: number }[]; sample: JobRow[] }> {
  const query = matching(trx, selection, window, searchable);
  const byQueue = (await query.clone().select('name as queue').count<{ queue: string; n: string }[]>('* as n').groupBy('name').orderBy('n', 'desc')) as {
    queue: string;
    n: string;
  }[];
  const sample = (await query
    .clone()
    .select(JOB_COLUMNS)
    .orderBy([
      { column: 'created_on', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(sampleSize)) as JobRow[];
  return { byQueue: byQueue.map((row) => ({ queue: row.queue, count: Number(row.n) })), sample };
}

/**
 * Snapshots the ids a selection matches into `bulk_action_items` (at most `limit`), in one
 * INSERT … SELECT. Returns how many were taken.
 */
export async function snapshotJobRows(
  trx: Knex.Transaction,
  selection: JobSelection,
  window: JobWindow,
  searchable: Searchable,
  into: { bulkActionId: string; limit: number },
): Promise<number> {
  const snapshot = matching(trx, selection, window, searchable)
    .select(trx.raw('?::uuid', [into.bulkActionId]), 'id', 'name')
    .limit(into.limit)
    .toSQL();
  const { rowCount } = await trx.raw(`INSERT INTO bulk_action_items (bulk_action_id, job_id, queue) ${snapshot.sql}`, snapshot.bindings as Knex.Value[]);
  return rowCount as number;
}

/** One job by id, in whatever queue (the console's job pages name no queue). */
export async function findJobRow(db: Knex | Knex.Transaction, id: string): Promise<JobRow | undefined> {
  return (await db(JOB).where({ id }).first(JOB_COLUMNS)) as JobRow | undefined;
}

/** Jobs by id, all at once. */
export async function findJobRows(db: Knex | Knex.Transaction, ids: readonly string[]): Promise<JobRow[]> {
  if (ids.length === 0) return [];
  return (await db(JOB).whereIn('id', ids).select(JOB_COLUMNS)) as JobRow[];
}

/** When a job was last sent to `queue` (a platform schedule's last run; the queue/created_on index). */
export async function lastCreatedOn(db: Knex | Knex.Transaction, queue: string): Promise<Date | null> {
  const { rows } = await db.raw(`SELECT max(created_on) AS last FROM ${JOB} WHERE name = ?`, [queue]);
  return (rows[0]?.last as Date | null) ?? null;
}
