import { expect } from 'chai';
import { createDb, type Db } from '../../src/db/knex.ts';
import { invitationEmailJob } from '../../src/invitations/jobs.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { unstamp } from '../../src/jobs/origin.ts';
import { runInWorkContext } from '../../src/platform/work-context.ts';
import { testDatabase } from '../support/hooks.ts';
import type { PgBoss } from 'pg-boss';

describe('enqueueing jobs in the caller’s transaction', () => {
  let db: Db;
  let boss: PgBoss;
  let jobs: JobQueue;
  const countFor = async (id: string) => Number((await db('pgboss.job').whereRaw(`data->>'invitation_id' = ?`, [id]).count('* as n'))[0]!.n);

  before(async () => {
    db = createDb(testDatabase().url, { max: 2 });
    boss = createBoss(testDatabase().url, 'web');
    await boss.start();
    jobs = new JobQueue(boss);
  });
  after(async () => {
    await boss.stop({ graceful: false, close: true });
    await db.destroy();
  });

  it('leaves no job when the transaction rolls back after the enqueue', async () => {
    const id = crypto.randomUUID();
    const failure = await db
      .transaction(async (trx) => {
        await jobs.enqueue(trx, invitationEmailJob, { invitation_id: id }, { organizationId: null });
        expect(Number((await trx('pgboss.job').whereRaw(`data->>'invitation_id' = ?`, [id]).count('* as n'))[0]!.n)).to.equal(1);
        throw new Error('the request failed after enqueueing');
      })
      .catch((error: Error) => error);
    expect((failure as Error).message).to.equal('the request failed after enqueueing');
    expect(await countFor(id)).to.equal(0);
  });

  it('keeps exactly one job when the transaction commits, and validates the payload first', async () => {
    const id = crypto.randomUUID();
    const jobId = await db.transaction((trx) => jobs.enqueue(trx, invitationEmailJob, { invitation_id: id }, { organizationId: null }));
    const row = await db('pgboss.job').where({ id: jobId }).first('name', 'state', 'data', 'retry_limit', 'dead_letter');
    expect(row).to.deep.equal({
      name: 'invitations.email.v1',
      state: 'created',
      data: { invitation_id: id },
      retry_limit: 8,
      dead_letter: 'invitations.email.v1.dead',
    });
    expect(await countFor(id)).to.equal(1);
    const invalid = await db
      .transaction((trx) => jobs.enqueue(trx, invitationEmailJob, { invitation_id: 'nope' }, { organizationId: null }))
      .catch((error: Error) => error);
    expect(invalid).to.be.instanceOf(Error);
  });

  it('records the organization as the group id and the request of the work context; the handler gets the payload without them', async () => {
    const id = crypto.randomUUID();
    const jobId = await runInWorkContext({ request_id: 'req-origin-1' }, () =>
      db.transaction((trx) => jobs.enqueue(trx, invitationEmailJob, { invitation_id: id }, { organizationId: 'org-origin-1' })),
    );
    const row = await db('pgboss.job').where({ id: jobId }).first('group_id', 'data');
    expect(row).to.deep.equal({ group_id: 'org-origin-1', data: { invitation_id: id, $request_id: 'req-origin-1' } });
    expect(unstamp(row.data)).to.deep.equal({ payload: { invitation_id: id }, requestId: 'req-origin-1', triggeredBy: null });
    // Found through the console's request-id index (built by release).
    const plan = await db.transaction(async (trx) => {
      await trx.raw('SET LOCAL enable_seqscan = off'); // the test table is tiny; ask whether the index can serve
      return (await trx.raw(`EXPLAIN SELECT id FROM pgboss.job WHERE data \\? '$request_id' AND data->>'$request_id' = 'req-origin-1'`)).rows;
    });
    // The partition's copy of job_ops_request_i (Postgres names it after the expression).
    expect(JSON.stringify(plan)).to.match(
      /Index Scan using \w+ on job_common[^"]*"\},\{"QUERY PLAN":" {2}Index Cond: \(\(data ->> '\$request_id'::text\) = 'req-origin-1'::text\)"/,
    );
  });
});

describe('release tuning of pg-boss job tables', () => {
  it('sets aggressive autovacuum/analyze parameters on every physical job table', async () => {
    const db = createDb(testDatabase().url, { max: 1 });
    try {
      const { rows } = await db.raw(
        `SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'pgboss' AND c.relname LIKE 'job%' AND c.relkind = 'r'`,
      );
      const common = rows.find((row: { relname: string }) => row.relname === 'job_common');
      expect(common.reloptions).to.include.members(['autovacuum_analyze_scale_factor=0.01', 'autovacuum_vacuum_scale_factor=0.02']);
    } finally {
      await db.destroy();
    }
  });
});
