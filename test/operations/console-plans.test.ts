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
  deadLetterSources,
  estimateJobRows,
  findJobRow,
  findJobRows,
  idsStillIn,
  indexJobTable,
  jobTableStatistics,
  lastCreatedOn,
  type JobSelection,
  listJobRows,
  lockDeadLettersOf,
  lockJobs,
  lockJobState,
  organizationLoad,
  previewJobRows,
  queueCounts,
  queueDepths,
  recordThroughput,
  redrivenCopiesOf,
  runningAttempts,
  snapshotJobRows,
  startNow,
  stuckAttempts,
} from '../../src/jobs/boss-sql/index.ts';
import { stamp } from '../../src/jobs/origin.ts';
import { createPause, resumePause } from '../../src/jobs/pauses.ts';
import { EXACT_COUNT_CAP, totalOf } from '../../src/operations/job-service.ts';
import { eventually } from '../support/eventually.ts';
import { testDatabase } from '../support/hooks.ts';

// Every console read and operator command on pg-boss's job table, planned over a million jobs seeded
// through pg-boss's own bulk insert: none may scan it. At this size a sequential scan is 0.1–1 s per
// request, so a plan that takes one is a console that stalls.

const ROWS = 1_000_000;
const SEARCHABLE = ['asset_id', 'call_id', 'run_id', 'organization_id'] as const;
const JOB = `${BOSS_SCHEMA}.job`;

/**
 * A month of work on `ROWS` jobs, stored as pg-boss stores them: inserted through its bulk insert
 * (`boss.insert`: its one json_to_recordset INSERT, with the queue's defaults), each payload stamped
 * as the runtime stamps it (`$request_id`) beside its searchable fields, the organization as the job's
 * group; then one UPDATE stands for the month the workers spent on them: created evenly over 30 days
 * (a day's window holds ~3% of the table), 96% completed and 1% each queued, running, retrying and
 * failed, in every queue. Returns how long each step took.
 */
async function seedThroughPgBoss(url: string, db: Knex, queues: readonly string[], organizations: readonly string[]): Promise<string> {
  const timings: string[] = [];
  let since = Date.now();
  const lap = (step: string) => {
    timings.push(`${step} ${((Date.now() - since) / 1000).toFixed(1)} s`);
    since = Date.now();
  };
  const boss = createBoss(url, 'web', { max: 2 });
  await boss.start();
  try {
    const BATCH = 25_000;
    for (let first = 1; first <= ROWS; first += BATCH * queues.length) {
      const byQueue = new Map<string, { data: object; group: { id: string } }[]>(queues.map((queue) => [queue, []]));
      for (let i = first; i < Math.min(first + BATCH * queues.length, ROWS + 1); i++) {
        // Queue, state and organization each follow the job's number on their own, so every queue has every state of every organization.
        const organization = organizations[Math.floor(i / (queues.length * 100)) % organizations.length]!;
        byQueue.get(queues[i % queues.length]!)!.push({
          data: stamp({ asset_id: `asset-${i}`, organization_id: organization }, { requestId: `req-${i}`, triggeredBy: null }),
          group: { id: organization },
        });
      }
      await Promise.all([...byQueue].map(([queue, jobs]) => boss.insert(queue, jobs)));
    }
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
  lap('insert');
  // Each job's number is in its payload; its state follows number / queues (see the organization above).
  const n = `substr(data->>'asset_id', 7)::int`;
  const state = `(CASE (${n} / ${queues.length}) % 100 WHEN 0 THEN 'created' WHEN 1 THEN 'active' WHEN 2 THEN 'retry' WHEN 3 THEN 'failed' ELSE 'completed' END)::${BOSS_SCHEMA}.job_state`;
  const at = `now() - make_interval(secs => ${n} * 2.592)`;
  await db.raw(
    `UPDATE ${JOB} SET state = ${state}, created_on = ${at}, start_after = ${at},
            started_on = CASE WHEN ${state} <> 'created' THEN ${at} END, completed_on = CASE WHEN ${state} > 'active' THEN ${at} END
      WHERE name = ANY(?)`,
    [[...queues]],
  );
  lap('month of work');
  return timings.join(', ');
}

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

/** The console's indexes on the parent `job` (release's, ./src/jobs/boss-sql/tables.ts). */
async function consoleIndexes(db: Knex): Promise<string[]> {
  const { rows } = await db.raw(
    `SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid WHERE x.indrelid = ?::regclass AND c.relname LIKE 'job\\_ops\\_%'`,
    [JOB],
  );
  return (rows as { relname: string }[]).map((row) => row.relname);
}

describe('operator console: every read of the job table is planned on an index', function () {
  this.timeout(300_000);
  let url: string;
  let db: Knex;
  let client: pg.Client;
  let queues: string[];
  const organizations = Array.from({ length: 40 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);

  before(async () => {
    url = await testDatabase().createMigratedDatabase('console_plans');
    db = createDb(url, { max: 2 });
    client = new pg.Client({ connectionString: url });
    await client.connect();
    queues = ((await db(`${BOSS_SCHEMA}.queue`).select('name').orderBy('name').limit(4)) as { name: string }[]).map((row) => row.name);
    expect(queues.length).to.be.greaterThan(1);
    const started = Date.now();
    // The console's indexes are built over the seeded table, as `release` builds them over a live one
    // (CONCURRENTLY, per partition): the seed writes only pg-boss's own.
    await db.raw(`DROP INDEX ${(await consoleIndexes(db)).map((name) => `${BOSS_SCHEMA}.${name}`).join(', ')}`);
    const seeded = await seedThroughPgBoss(url, db, queues, organizations);
    let since = Date.now();
    await indexJobTable(db, SEARCHABLE);
    const indexed = (Date.now() - since) / 1000;
    since = Date.now();
    // As autovacuum would after a month: the update's dead rows gone, statistics current.
    await db.raw(`VACUUM (ANALYZE) ${JOB}`);
    console.log(
      `      seeded ${ROWS.toLocaleString('en')} jobs in ${((Date.now() - started) / 1000).toFixed(1)} s (${seeded}, console indexes ${indexed.toFixed(1)} s, vacuum ${((Date.now() - since) / 1000).toFixed(1)} s)`,
    );
    expect(await consoleIndexes(db)).to.include.members(['job_ops_created_i', 'job_ops_request_i', 'job_ops_payload_asset_id_i']);
    expect(Number((await db(JOB).count('* as n'))[0]!.n)).to.equal(ROWS);
  });

  after(async () => {
    await client?.end();
    await db?.destroy();
  });

  /** `job`, its partitions as they are now (a queue created later adds one) and their full indexes. */
  async function jobTables(): Promise<Tables> {
    const { rows } = await db.raw(
      `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ? AND (c.relname = 'job' OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = ?::regclass))`,
      [BOSS_SCHEMA, JOB],
    );
    const job = new Set((rows as { relname: string }[]).map((row) => row.relname));
    const { rows: indexes } = await db.raw(
      `SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = ? AND t.relname = ANY(?) AND x.indpred IS NULL`,
      [BOSS_SCHEMA, [...job]],
    );
    return { job, fullIndexes: new Set((indexes as { relname: string }[]).map((row) => row.relname)) };
  }

  /** The statements `read` sends, as the driver sends them; a command's writes are rolled back after. */
  async function statementsOf(read: (trx: Knex.Transaction) => Promise<unknown>): Promise<Planned[]> {
    const seen: Planned[] = [];
    const listener = (query: { sql: string; bindings?: unknown[] }) => {
      if (query.sql.includes(`${BOSS_SCHEMA}`) || query.sql.includes('"pgboss"')) seen.push({ sql: query.sql, bindings: query.bindings ?? [] });
    };
    const undo = new Error('rolled back');
    db.on('query', listener);
    try {
      await db.transaction(async (trx) => {
        await read(trx);
        throw undo;
      });
    } catch (error) {
      if (error !== undo) throw error;
    } finally {
      db.off('query', listener);
    }
    return seen;
  }

  // A statement that writes is planned (EXPLAIN) but not run again: its rows would not satisfy its own constraints twice.
  const WRITES = /\bINSERT\s+INTO\b|\bUPDATE\s+[\w."]+(\s+\w+)?\s+SET\b|\bDELETE\s+FROM\b/i;

  async function expectIndexed(name: string, read: (trx: Knex.Transaction) => Promise<unknown>): Promise<void> {
    const statements = await statementsOf(read);
    expect(statements, `${name} sent no statement on ${BOSS_SCHEMA}`).to.not.be.empty;
    const tables = await jobTables();
    for (const statement of statements) {
      if (/^\s*EXPLAIN/i.test(statement.sql)) continue;
      // knex reports a statement as the driver sent it ($n placeholders) or still in its own `?` form.
      const text = /\$\d/.test(statement.sql) || statement.bindings.length === 0 ? statement.sql : (db.client.positionBindings(statement.sql) as string);
      const writes = WRITES.test(text);
      const { rows } = await client.query(`EXPLAIN (${writes ? '' : 'ANALYZE, '}FORMAT JSON) ${text}`, statement.bindings as unknown[]);
      const plan = rows[0]['QUERY PLAN'][0];
      const scans = scansOfJob(plan.Plan, tables);
      if (process.env.SHOW_PLAN === name) console.log(JSON.stringify(plan.Plan, null, 1));
      console.log(`      ${name}: ${writes ? 'planned' : `${plan['Execution Time'].toFixed(2)} ms`}  ${outline(plan.Plan)}`);
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
    // The job list's request and resource filters keep its time window (the lookups above have none).
    await expectIndexed('by request id, a day', list({ request_id: 'req-1234' }));
    await expectIndexed('by resource id, a day', list({ resource_id: 'asset-1234' }));
    const inWindow = await db.transaction((trx) => listJobRows(trx, { request_id: 'req-1234' }, day(), SEARCHABLE, { limit: 50 }));
    expect(inWindow.items.map((row) => row.data?.asset_id)).to.deep.equal(['asset-1234']);
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
    // A cursor 950,000 rows deep, as the page before it would have issued it.
    const [deep] = (await db(JOB).select(db.raw('created_on::text AS created'), 'id').orderByRaw('created_on DESC, id DESC').offset(950_000).limit(1)) as {
      created: string;
      id: string;
    }[];
    const cursor = encodeCursor([deep!.created, deep!.id]);
    const found = await db.transaction((trx) => listJobRows(trx, {}, window, SEARCHABLE, { limit: 50, cursor }));
    const expected = (await db(JOB).select('id').orderByRaw('created_on DESC, id DESC').offset(950_001).limit(50)) as { id: string }[];
    expect(found.items.map((row) => row.id)).to.deep.equal(expected.map((row) => row.id));
    await expectIndexed('deep page', (trx) => listJobRows(trx, {}, window, SEARCHABLE, { limit: 50, cursor }));
    await expectIndexed('deep page of a queue', (trx) => listJobRows(trx, { queue: queues[0] }, window, SEARCHABLE, { limit: 50, cursor }));
  });

  it('queue health, the fairness panel and the queue gauges', async () => {
    await expectIndexed('queue health', (trx) => queueCounts(trx, { organizationId: null, hours: 24 }));
    await expectIndexed('queue health of one organization', (trx) => queueCounts(trx, { organizationId: organizations[5]!, hours: 24 }));
    await expectIndexed('fairness panel', (trx) => organizationLoad(trx, null, 20));
    await expectIndexed('fairness panel of one organization', (trx) => organizationLoad(trx, organizations[5]!, 20));
    await expectIndexed('queue gauges', (trx) => queueDepths(trx));
  });

  it('operator commands and running jobs: locks, dead-letter lineage, pauses, retry now, bulk snapshots, stuck attempts', async () => {
    const liveness = { liveWithinSeconds: 60 };
    const queue = queues[0]!;
    const idsIn = async (state: string, n: number) =>
      ((await db(JOB).where({ name: queue, state }).select('id').limit(n)) as { id: string }[]).map((row) => row.id);
    const failed = await idsIn('failed', 20);
    const running = await idsIn('active', 50);
    const [waiting] = await idsIn('retry', 1);
    const refs = failed.map((id) => ({ queue, id }));
    expect(failed).to.have.length(20);
    expect(running).to.have.length(50);

    await expectIndexed('stuck list', list({ stuck: liveness }, { from: new Date(Date.now() - 31 * 86_400_000), to: new Date(Date.now() + 60_000) }));
    await expectIndexed('stuck attempts', (trx) => stuckAttempts(trx, { ...liveness, organizationId: null }));
    await expectIndexed('stuck attempts of one organization', (trx) => stuckAttempts(trx, { ...liveness, organizationId: organizations[2]! }));
    await expectIndexed('running attempts of a page', (trx) => runningAttempts(trx, running, liveness));
    await expectIndexed('jobs by id', (trx) => findJobRows(trx, running));
    await expectIndexed('lock one job', (trx) => lockJobState(trx, queue, failed[0]!));
    await expectIndexed('lock a batch', (trx) => lockJobs(trx, refs));
    await expectIndexed("lock failures' dead letters", (trx) => lockDeadLettersOf(trx, refs));
    await expectIndexed('redriven copies of failures', (trx) => redrivenCopiesOf(trx, refs));
    await expectIndexed('dead letters’ sources', (trx) => deadLetterSources(trx, `${queue}.dead`, failed));
    await expectIndexed('ids still in a queue', (trx) => idsStillIn(trx, queue, failed));
    await expectIndexed('retry now', async (trx) => {
      await trx(JOB)
        .where({ name: queue, id: waiting! })
        .update({ start_after: trx.raw("now() + interval '1 hour'") });
      expect(await startNow(trx, queue, waiting!)).to.equal('started');
    });
    const pauseAndResume = (scope: 'queue' | 'organization') => async (trx: Knex.Transaction) => {
      const organization_id = scope === 'organization' ? organizations[4]! : null;
      const paused = await createPause(
        trx,
        { scope, queue, organization_id, schedule: null },
        { reason: 'plans', expires_at: null, created_by: 'test', set_by: 'operator' },
      );
      expect(paused!.deferred).to.be.greaterThan(0);
      const resumed = await resumePause(trx, paused!.pause.id, { id: 'test', operator: true });
      expect(resumed!.restored).to.equal(paused!.deferred);
    };
    await expectIndexed('pause and resume an organization on a queue', pauseAndResume('organization'));
    await expectIndexed('pause and resume a queue', pauseAndResume('queue'));
    await expectIndexed('bulk snapshot', async (trx) => {
      const [bulk] = (await trx('bulk_actions').insert({ action: 'cancel', filter: '{}', total: 0, created_by: 'test' }).returning('id')) as { id: string }[];
      const taken = await snapshotJobRows(trx, { queue, states: ['created', 'retry', 'active'], deadLetters: 'excluded' }, day(), SEARCHABLE, {
        bulkActionId: bulk!.id,
        limit: 100_001,
      });
      expect(taken).to.equal(await countJobRows(trx, { queue, states: ['created', 'retry', 'active'] }, day(), SEARCHABLE));
    });
    await expectIndexed('throughput snapshot', (trx) => recordThroughput(trx));
  });

  it('totals at a million jobs: counted when few, else estimates that say so, of the right order of magnitude', async () => {
    const month = { from: new Date(Date.now() - 31 * 86_400_000), to: new Date(Date.now() + 60_000) };
    const cases: [string, JobSelection, { from: Date; to: Date }][] = [
      ['the default list, a day', { queueOrigin: { kind: 'work', cronQueues: [queues[1]!] } }, day()],
      ['one queue, a day', { queue: queues[0] }, day()],
      ['failed, a month', { state: 'failed' }, month],
      ['one organization, a month', { organization_id: organizations[3] }, month],
      ['everything, a month', {}, month],
      ["one queue's queued jobs, a day", { queue: queues[0], state: 'created' }, day()],
    ];
    for (const [name, selection, window] of cases) {
      const exact = await db.transaction((trx) => countJobRows(trx, selection, window, SEARCHABLE));
      const total = await db.transaction((trx) => totalOf(trx, selection, window, [...SEARCHABLE], false));
      console.log(`      ${name}: ${total.value} (${total.basis}) for ${exact}`);
      if (exact <= EXACT_COUNT_CAP) {
        expect(total, name).to.deep.equal({ value: exact, exact: true, at_least: null, basis: 'counted' });
        continue;
      }
      expect(total, name).to.include({ exact: false, at_least: EXACT_COUNT_CAP + 1 });
      expect(total.value / exact, `${name}: ${total.value} (${total.basis}) for ${exact}`).to.be.within(0.5, 2);
    }
  });

  it('a total right after a burst the planner has not seen (statistics older than the burst) is still of the right order', async () => {
    const BURST = 30_000;
    const [fresh] = (await db(`${BOSS_SCHEMA}.queue`).whereNotIn('name', queues).orderBy('name', 'desc').select('name', 'table_name').limit(1)) as {
      name: string;
      table_name: string;
    }[];
    // Autovacuum analyzes the table within a minute of a burst; until it does, the planner knows nothing of it.
    await db.raw(`ALTER TABLE ${BOSS_SCHEMA}.${fresh!.table_name} SET (autovacuum_enabled = false)`);
    const boss = createBoss(url, 'web', { max: 1 });
    await boss.start();
    try {
      // A fan-out: one insert of pg-boss's, every job created in the same instant.
      await boss.insert(
        fresh!.name,
        Array.from({ length: BURST }, (_, i) => ({ data: stamp({ asset_id: `burst-${i}` }, { requestId: `burst-${i}`, triggeredBy: null }) })),
      );
      await eventually('the activity statistics count the burst', async () => (await db.transaction((trx) => jobTableStatistics(trx))).modified >= BURST);
      const planner = await db.transaction((trx) => estimateJobRows(trx, { queue: fresh!.name }, day(), SEARCHABLE));
      const total = await db.transaction((trx) => totalOf(trx, { queue: fresh!.name }, day(), [...SEARCHABLE], false));
      console.log(`      a burst of ${BURST}: ${total.value} (${total.basis}), the planner's ${planner}`);
      expect(planner, 'the planner has not seen the burst').to.be.below(EXACT_COUNT_CAP);
      expect(total).to.include({ exact: false, at_least: EXACT_COUNT_CAP + 1, basis: 'extrapolated' });
      expect(total.value / BURST, `${total.value} for ${BURST}`).to.be.within(0.5, 2);
    } finally {
      await boss.stop({ graceful: false, close: true });
      await db(JOB).where({ name: fresh!.name }).delete();
      await db.raw(`ALTER TABLE ${BOSS_SCHEMA}.${fresh!.table_name} RESET (autovacuum_enabled)`);
    }
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
});
