import { expect } from 'chai';
import type { Knex } from 'knex';
import pg from 'pg';
import { encodeCursor } from '../../src/core/pagination.ts';
import { createDb } from '../../src/db/knex.ts';
import { BOSS_SCHEMA, createBoss } from '../../src/jobs/boss.ts';
import {
  cachedQueueCounts,
  countJobRows,
  countJobRowsUpTo,
  estimateJobRows,
  findJobRow,
  indexJobTable,
  lastCreatedOn,
  type JobSelection,
  listJobRows,
  organizationLoad,
  previewJobRows,
  queueCounts,
  queueDepths,
} from '../../src/jobs/boss-sql/index.ts';
import { testDatabase } from '../support/hooks.ts';

// Every console read of pg-boss's job table, planned over a million seeded jobs (one INSERT … SELECT
// with pg-boss's columns, in seconds): none may scan it. At this size a sequential scan is 0.1–1 s
// per request, so a plan that takes one is a console that stalls.

const ROWS = 1_000_000;
const SEARCHABLE = ['asset_id', 'call_id', 'run_id', 'organization_id'] as const;

interface Planned {
  sql: string;
  bindings: unknown[];
}

/** A plan in one line: its nodes and the indexes they read. */
function outline(plan: Record<string, unknown>): string {
  const children = ((plan.Plans as Record<string, unknown>[] | undefined) ?? []).map(outline);
  const node = `${plan['Node Type']}${plan['Index Name'] ? ` ${plan['Index Name']}` : plan['Relation Name'] ? ` ${plan['Relation Name']}` : ''}`;
  return children.length ? `${node}(${children.join(', ')})` : node;
}

/**
 * The nodes of a plan that read `pgboss.job` (or a partition of it) whole: a sequential scan, or an
 * index scan with no condition over a full index (an ordered walk filtering every row, which is a
 * scan too). A partial index read whole is fine: it holds only open jobs.
 */
function scansOfJob(plan: Record<string, unknown>, tables: Tables, found: string[] = []): string[] {
  const type = String(plan['Node Type']);
  if (type === 'Seq Scan' && tables.job.has(String(plan['Relation Name']))) found.push(`Seq Scan ${plan['Relation Name']}`);
  if (/Index/.test(type) && plan['Index Name'] && tables.fullIndexes.has(String(plan['Index Name'])) && !plan['Index Cond'])
    found.push(`${type} ${plan['Index Name']} without a condition`);
  for (const child of (plan.Plans as Record<string, unknown>[] | undefined) ?? []) scansOfJob(child, tables, found);
  return found;
}

interface Tables {
  /** pgboss.job and its partitions. */
  job: Set<string>;
  /** Their indexes that are not partial. */
  fullIndexes: Set<string>;
}

describe('operator console: every read of the job table is planned on an index', function () {
  this.timeout(180_000);
  let url: string;
  let db: Knex;
  let client: pg.Client;
  let tables: Tables;
  let queues: string[];
  const organizations = Array.from({ length: 40 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);

  before(async () => {
    url = await testDatabase().createMigratedDatabase('console_plans');
    db = createDb(url, { max: 2 });
    client = new pg.Client({ connectionString: url });
    await client.connect();
    queues = ((await db(`${BOSS_SCHEMA}.queue`).select('name').orderBy('name').limit(4)) as { name: string }[]).map((row) => row.name);
    expect(queues.length).to.be.greaterThan(1);
    // Spread over a month (a day's window is ~3% of the table, as at 1M jobs with a month's retention).
    // Through pg-boss's table as pg-boss stores jobs: the request id and resource ids in the payload, the organization as group id.
    await db.raw(
      `INSERT INTO ${BOSS_SCHEMA}.job (id, name, data, state, group_id, created_on, start_after, started_on, completed_on)
       SELECT gen_random_uuid(), (?::text[])[1 + i % ?], jsonb_build_object('$request_id', 'req-' || i, 'asset_id', 'asset-' || i, 'organization_id', (?::text[])[1 + i % 40]),
              s.state, (?::text[])[1 + i % 40], c.created_on, c.created_on, CASE WHEN s.state <> 'created' THEN c.created_on END,
              CASE WHEN s.state > 'active' THEN c.created_on END
         FROM generate_series(1, ?) i,
              LATERAL (SELECT now() - make_interval(secs => i * 65) AS created_on) c,
              LATERAL (SELECT (CASE WHEN i % 100 = 0 THEN 'created' WHEN i % 100 = 1 THEN 'active' WHEN i % 100 = 2 THEN 'retry'
                                    WHEN i % 100 = 3 THEN 'failed' ELSE 'completed' END)::${BOSS_SCHEMA}.job_state AS state) s`,
      [queues, queues.length, organizations, organizations, ROWS],
    );
    // What `release` runs after pg-boss's own migrations (the template was released before this seed).
    await indexJobTable(db, SEARCHABLE);
    await db.raw(`ANALYZE ${BOSS_SCHEMA}.job`);
    const { rows } = await db.raw(
      `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ? AND (c.relname = 'job' OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = ?::regclass))`,
      [BOSS_SCHEMA, `${BOSS_SCHEMA}.job`],
    );
    const job = new Set((rows as { relname: string }[]).map((row) => row.relname));
    const { rows: indexes } = await db.raw(
      `SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = ? AND t.relname = ANY(?) AND x.indpred IS NULL`,
      [BOSS_SCHEMA, [...job]],
    );
    tables = { job, fullIndexes: new Set((indexes as { relname: string }[]).map((row) => row.relname)) };
  });

  after(async () => {
    await client?.end();
    await db?.destroy();
  });

  /** The statements `read` sends, as the driver sends them. */
  async function statementsOf(read: (trx: Knex.Transaction) => Promise<unknown>): Promise<Planned[]> {
    const seen: Planned[] = [];
    const listener = (query: { sql: string; bindings?: unknown[] }) => {
      if (query.sql.includes(`${BOSS_SCHEMA}`) || query.sql.includes('"pgboss"')) seen.push({ sql: query.sql, bindings: query.bindings ?? [] });
    };
    db.on('query', listener);
    try {
      await db.transaction(read);
    } finally {
      db.off('query', listener);
    }
    return seen;
  }

  async function expectIndexed(name: string, read: (trx: Knex.Transaction) => Promise<unknown>): Promise<void> {
    const statements = await statementsOf(read);
    expect(statements, `${name} sent no statement on ${BOSS_SCHEMA}`).to.not.be.empty;
    for (const statement of statements) {
      if (/^\s*EXPLAIN/i.test(statement.sql)) continue;
      // knex reports a statement as the driver sent it ($n placeholders) or still in its own `?` form.
      const text = /\$\d/.test(statement.sql) || statement.bindings.length === 0 ? statement.sql : (db.client.positionBindings(statement.sql) as string);
      const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, statement.bindings as unknown[]);
      const plan = rows[0]['QUERY PLAN'][0];
      const scans = scansOfJob(plan.Plan, tables);
      if (process.env.SHOW_PLAN === name) console.log(JSON.stringify(plan.Plan, null, 1));
      console.log(`      ${name}: ${plan['Execution Time'].toFixed(2)} ms  ${outline(plan.Plan)}`);
      expect(scans, `${name} scans ${scans.join(', ')}:\n${text}\n${JSON.stringify(plan.Plan, null, 1)}`).to.deep.equal([]);
    }
  }

  const day = () => ({ from: new Date(Date.now() - 86_400_000), to: new Date(Date.now() + 60_000) });
  const list =
    (selection: JobSelection, window = day() as ReturnType<typeof day> | null, cursor?: string) =>
    (trx: Knex.Transaction) =>
      listJobRows(trx, selection, window, SEARCHABLE, { limit: 50, cursor });

  it('lookup by request id and by resource id (no window) finds the job through the payload indexes', async () => {
    await expectIndexed('by request id', list({ request_id: 'req-1234' }, null));
    await expectIndexed('by resource id', list({ resource_id: 'asset-1234' }, null));
    const found = await db.transaction((trx) => listJobRows(trx, { request_id: 'req-1234' }, null, SEARCHABLE, { limit: 50 }));
    expect(found.items.map((row) => row.data?.asset_id)).to.deep.equal(['asset-1234']);
    const byResource = await db.transaction((trx) => listJobRows(trx, { resource_id: 'asset-1234' }, null, SEARCHABLE, { limit: 50 }));
    expect(byResource.items.map((row) => row.data?.$request_id)).to.deep.equal(['req-1234']);
    // A resource id found in another searchable field (here every job of an organization), newest first, paged.
    const byOrganization = await db.transaction((trx) => listJobRows(trx, { resource_id: organizations[7]! }, null, SEARCHABLE, { limit: 50 }));
    expect(byOrganization.items).to.have.length(50);
    expect(byOrganization.next_cursor).to.be.a('string');
    expect(byOrganization.items.every((row) => row.data?.organization_id === organizations[7])).to.equal(true);
    const next = await db.transaction((trx) =>
      listJobRows(trx, { resource_id: organizations[7]! }, null, SEARCHABLE, { limit: 50, cursor: byOrganization.next_cursor! }),
    );
    expect(next.items).to.have.length(50);
    expect(next.items[0]!.created_on.getTime()).to.be.lessThan(byOrganization.items.at(-1)!.created_on.getTime());
  });

  it('lists by queue, organization and state, their totals, and a job by id', async () => {
    await expectIndexed('by queue', list({ queue: queues[0] }));
    await expectIndexed('by organization', list({ organization_id: organizations[3] }));
    await expectIndexed('by state', list({ state: 'failed' }));
    await expectIndexed('all', list({}));
    await expectIndexed('count by queue', (trx) => countJobRows(trx, { queue: queues[0] }, day(), SEARCHABLE));
    await expectIndexed('estimate', (trx) => estimateJobRows(trx, { queue: queues[0] }, day(), SEARCHABLE));
    await expectIndexed('bulk preview', (trx) => previewJobRows(trx, { queue: queues[0], states: ['failed', 'cancelled'] }, day(), SEARCHABLE, 10));
    // A platform schedule's queue is sent to a few times a day: one no job was seeded into.
    const [quiet] = (await db(`${BOSS_SCHEMA}.queue`).whereNotIn('name', queues).select('name').limit(1)) as { name: string }[];
    await expectIndexed("a schedule's last run", (trx) => lastCreatedOn(trx, quiet!.name));
    const [one] = (await db(`${BOSS_SCHEMA}.job`).select('id').limit(1)) as { id: string }[];
    await expectIndexed('job by id', (trx) => findJobRow(trx, one!.id));
  });

  it('the default list (work origin), the cron and internal filters and the bounded count (issue 25)', async () => {
    const cronQueues = [queues[1]!];
    await expectIndexed('work origin', list({ queueOrigin: { kind: 'work', cronQueues } }));
    await expectIndexed('cron origin', list({ queueOrigin: { kind: 'cron', cronQueues } }));
    await expectIndexed('internal origin', list({ queueOrigin: { kind: 'internal', cronQueues } }));
    await expectIndexed('bounded count', (trx) => countJobRowsUpTo(trx, { queueOrigin: { kind: 'work', cronQueues } }, day(), SEARCHABLE, 10_001));
    await expectIndexed('bounded count by state', (trx) => countJobRowsUpTo(trx, { state: 'failed' }, day(), SEARCHABLE, 10_001));
    await expectIndexed("pg-boss's queue counts", (trx) => cachedQueueCounts(trx));
    const counted = await db.transaction((trx) => countJobRowsUpTo(trx, { queue: queues[0] }, day(), SEARCHABLE, 10_001));
    const exact = await db.transaction((trx) => countJobRows(trx, { queue: queues[0] }, day(), SEARCHABLE));
    expect(counted.n).to.equal(Math.min(exact, 10_001));
  });

  it('a deep page resumes on the index at its cursor, and pages do not overlap', async () => {
    const window = { from: new Date(Date.now() - 60 * 86_400_000), to: new Date(Date.now() + 60_000) };
    // A cursor 30,000 rows deep (three quarters of the table), as the page before it would have issued it.
    const [deep] = (await db(`${BOSS_SCHEMA}.job`)
      .select(db.raw('created_on::text AS created'), 'id')
      .orderByRaw('created_on DESC, id DESC')
      .offset(30_000)
      .limit(1)) as { created: string; id: string }[];
    const cursor = encodeCursor([deep!.created, deep!.id]);
    const found = await db.transaction((trx) => listJobRows(trx, {}, window, SEARCHABLE, { limit: 50, cursor }));
    const expected = (await db(`${BOSS_SCHEMA}.job`).select('id').orderByRaw('created_on DESC, id DESC').offset(30_001).limit(50)) as { id: string }[];
    expect(found.items.map((row) => row.id)).to.deep.equal(expected.map((row) => row.id));
    await expectIndexed('deep page', (trx) => listJobRows(trx, {}, window, SEARCHABLE, { limit: 50, cursor }));
    await expectIndexed('deep page of a queue', (trx) => listJobRows(trx, { queue: queues[0] }, window, SEARCHABLE, { limit: 50, cursor }));
  });

  it("a queue pg-boss partitions later gets the console's indexes from the parent", async () => {
    const boss = createBoss(url, 'web');
    await boss.start();
    try {
      await boss.createQueue('console-plans-partitioned', { partition: true });
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
    const { rows } = await db.raw(
      `SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
        WHERE x.indrelid = (SELECT (? || '.' || table_name)::regclass FROM ${BOSS_SCHEMA}.queue WHERE name = 'console-plans-partitioned')`,
      [BOSS_SCHEMA],
    );
    const names = (rows as { relname: string }[]).map((row) => row.relname).join(' ');
    // Attached partitions get a copy of every index of the parent, named after their own table.
    expect((await db.raw(`SELECT table_name FROM ${BOSS_SCHEMA}.queue WHERE name = 'console-plans-partitioned'`)).rows[0].table_name).to.not.equal(
      'job_common',
    );
    for (const columns of ['created_on_id_idx', 'group_id_name_state_idx', 'name_created_on_id_idx', 'expr_idx']) expect(names).to.include(columns);
  });

  it('queue health, the fairness panel and the queue gauges', async () => {
    await expectIndexed('queue health', (trx) => queueCounts(trx, { organizationId: null, hours: 24 }));
    await expectIndexed('queue health of one organization', (trx) => queueCounts(trx, { organizationId: organizations[5]!, hours: 24 }));
    await expectIndexed('fairness panel', (trx) => organizationLoad(trx, null, 20));
    await expectIndexed('fairness panel of one organization', (trx) => organizationLoad(trx, organizations[5]!, 20));
    await expectIndexed('queue gauges', (trx) => queueDepths(trx));
  });
});
