import { expect } from 'chai';
import * as plans from 'pg-boss/dist/plans.js';
import { z } from 'zod';
import { createBoss, ensureQueues } from '../../src/jobs/boss.ts';
import { prepareHotStatements, preparedName, recordClaims } from '../../src/jobs/boss-sql/index.ts';
import { testJob } from '../support/jobs.ts';
import { isolatedDatabase } from './support.ts';

/**
 * A worker's pg-boss sends its fetches and settles as named prepared statements
 * (src/jobs/boss-sql/prepared.ts), planned once per connection; the fetch prepared is the one
 * recordClaims rewrote (it marks the claim), and every other statement stays unnamed.
 */
describe('jobs: pg-boss fetches and settles as prepared statements', function () {
  this.timeout(60_000);
  const WORKER = '00000000-0000-4000-8000-0000000000c3';
  const job = testJob({
    name: 'test.prepared.fetch',
    version: 1,
    nature: 'computes',
    payload: z.object({ n: z.number() }).strict(),
    policy: { retryLimit: 0, retryDelaySeconds: 0, retryBackoff: true, retryDelayMaxSeconds: 1, heartbeatSeconds: null },
    handler: () => Promise.resolve(async () => undefined),
  });
  let url: string;

  before(async () => {
    url = await isolatedDatabase();
    const setup = createBoss(url, 'release');
    await setup.start();
    await ensureQueues(setup, [job]);
    await setup.stop({ graceful: false, close: true });
  });

  it("names pg-boss's single-statement fetches and settles, and leaves its multi-command texts (the monitor's locked fails) unnamed", () => {
    const fetch = plans.fetchNextJob({ schema: 'pgboss', table: 'job', name: 'q', policy: 'standard', limit: 1 } as Parameters<typeof plans.fetchNextJob>[0]);
    expect(preparedName(fetch.text)).to.match(/^pgboss_[0-9a-f]{24}$/);
    expect(preparedName(plans.completeJobs('pgboss', 'job', false, true))).to.match(/^pgboss_/);
    expect(preparedName(plans.failJobsById('pgboss', 'job', true))).to.match(/^pgboss_/);
    // Several commands (BEGIN; advisory lock; the fail; COMMIT): PostgreSQL refuses them as one prepared statement.
    expect(preparedName(plans.failJobsByTimeout('pgboss', 'job', ['q'], false))).to.equal(null);
    expect(preparedName(plans.failJobsByHeartbeat('pgboss', 'job', ['q'], false))).to.equal(null);
    expect(preparedName('SELECT 1')).to.equal(null);
  });

  it('prepares the marked fetch, the completion and the fail once each on the connection, and nothing else', async () => {
    // One connection, so the session whose prepared statements are read is the one that ran them.
    const boss = createBoss(url, 'worker', { max: 1, supervise: false, schedule: false });
    prepareHotStatements(boss);
    recordClaims(boss, WORKER, [job.name]);
    await boss.start();
    try {
      const ids: string[] = [];
      for (let n = 0; n < 4; n++) ids.push((await boss.send(job.name, { n }))!);
      for (let n = 0; n < 3; n++) {
        const [fetched] = await boss.fetch(job.name);
        await boss.complete(job.name, fetched!.id);
      }
      const [last] = await boss.fetch(job.name);
      await boss.fail(job.name, last!.id, { message: 'for the test' });
      await boss.getQueues();

      const db = boss.getDb();
      const { rows } = (await db.executeSql(`SELECT name, statement FROM pg_prepared_statements ORDER BY statement`)) as {
        rows: { name: string; statement: string }[];
      };
      expect(rows.map((row) => row.name).every((name) => /^pgboss_[0-9a-f]{24}$/.test(name))).to.equal(true);
      const kinds = rows.map(({ statement }) =>
        /claimed_by = \$\d+::uuid, state = 'active'/.test(statement)
          ? 'fetch (marked)'
          : /state = 'completed'/.test(statement)
            ? 'complete'
            : /deleted_jobs AS/.test(statement)
              ? 'fail'
              : statement.slice(0, 60),
      );
      expect(kinds.sort()).to.deep.equal(['complete', 'fail', 'fetch (marked)']);

      const { rows: jobs } = (await db.executeSql(`SELECT state, claimed_by FROM pgboss.job WHERE name = $1 ORDER BY state`, [job.name])) as {
        rows: { state: string; claimed_by: string }[];
      };
      expect(jobs).to.deep.equal([
        { state: 'completed', claimed_by: WORKER },
        { state: 'completed', claimed_by: WORKER },
        { state: 'completed', claimed_by: WORKER },
        { state: 'failed', claimed_by: WORKER },
      ]);
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
  });
});
