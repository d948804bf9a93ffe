import { expect } from 'chai';
import { connectionBudget } from '../../src/db/budget.ts';
import { invitationEmailJob } from '../../src/invitations/jobs.ts';
import { testConfig } from '../support/config.ts';
import { createAsset, createOrganization, newUser } from '../support/factories.ts';
import { useChildProcesses } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';
import { createDb, eventually, expireAttemptsQuickly, isolatedDatabase, jobState, logLines, seedInvitation, spawnWorker } from '../jobs/support.ts';

/** Connections of this database's processes by application_name, the largest count seen over `sample`. */
async function peakConnections(db: ReturnType<typeof createDb>, sample: () => Promise<unknown>): Promise<Record<string, number>> {
  const peak: Record<string, number> = {};
  let done = false;
  const watching = (async () => {
    while (!done) {
      const { rows } = await db.raw(
        `SELECT application_name AS name, count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name LIKE 'workspace-%' GROUP BY 1`,
      );
      for (const { name, n } of rows as { name: string; n: number }[]) peak[name] = Math.max(peak[name] ?? 0, n);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  try {
    await sample();
  } finally {
    done = true;
    await watching;
  }
  return peak;
}

describe('connection budget (many dynos, one Postgres)', function () {
  this.timeout(60_000);

  it('sizes the pools per process kind, and DB_POOL_MAX / PGBOSS_POOL_MAX shrink them', () => {
    expect(connectionBudget(testConfig(), 'web')).to.deep.equal({ knex: 10, boss: 0, listen: 1, total: 11 });
    // A worker's pools are fixed: the slots (hundreds for waiting work) take connections per statement, not per slot.
    for (const slots of [{} as Record<string, string>, { WORKER_CONCURRENCY: '64' }, { WORKER_WAITING_SLOTS: '2048', WORKER_COMPUTING_SLOTS: '64' }])
      expect(connectionBudget(testConfig(slots), 'worker'), JSON.stringify(slots)).to.deep.equal({ knex: 16, boss: 8, listen: 1, total: 25 });
    expect(connectionBudget(testConfig({ DB_POOL_MAX: '2', PGBOSS_POOL_MAX: '0' }), 'worker')).to.deep.equal({ knex: 2, boss: 0, listen: 1, total: 3 });
    expect(connectionBudget(testConfig({ DB_POOL_MAX: '4', PGBOSS_POOL_MAX: '1' }), 'web')).to.deep.equal({ knex: 4, boss: 1, listen: 1, total: 6 });
    expect(() => testConfig({ DB_POOL_MAX: '0' })).to.throw(/DB_POOL_MAX/);
  });

  describe('small pools on real processes', () => {
    let url: string;
    let db: ReturnType<typeof createDb>;
    const worker = useChildProcesses((env: Record<string, string> = {}) => spawnWorker(url, env));

    before(async () => {
      url = await isolatedDatabase();
      db = createDb(url, { max: 2 });
      await expireAttemptsQuickly(url, invitationEmailJob.name, 5);
    });
    after(async () => db.destroy());

    it('a worker with DB_POOL_MAX=2 and PGBOSS_POOL_MAX=0 works its jobs on 2 pooled connections and its LISTEN, with no pool of pg-boss', async () => {
      const child = worker({ DB_POOL_MAX: '2', PGBOSS_POOL_MAX: '0', WORKER_CONCURRENCY: '1', WORKER_POLL_INTERVAL_SECONDS: '1', LOG_LEVEL: 'info' });
      await child.waitForOutput(/worker started/);
      const peak = await peakConnections(db, async () => {
        const jobs = await Promise.all(Array.from({ length: 3 }, () => seedInvitation(db, url)));
        for (const { jobId } of jobs) await eventually(async () => (await jobState(db, jobId))?.state === 'completed');
      });
      // Two pooled connections plus the LISTEN connection (opened outside the pool, same name).
      expect(peak['workspace-worker']).to.be.within(2, 3);
      expect(peak).to.not.have.property('workspace-worker-boss');
      child.child.kill('SIGTERM');
      const exit = await child.exited;
      expect(exit.code).to.equal(0);
      expect(logLines(exit.stdout).filter((line) => line.level >= 40)).to.deep.equal([]);
    });

    it('a web with DB_POOL_MAX=2 answers 40 concurrent reads on at most 2 connections, its pg-boss on the same pool', async () => {
      const server = await startTestServer({ DB_POOL_MAX: '2' }, { databaseUrl: url });
      try {
        const owner = newUser();
        const organizationId = await createOrganization(server, owner);
        const asset = await createAsset(server, owner, organizationId, { title: 'Budget' });
        const statuses: number[] = [];
        const peak = await peakConnections(db, async () => {
          const answers = await Promise.all(
            Array.from({ length: 40 }, (_, i) =>
              server.request('get', i % 2 ? `/organizations/${organizationId}` : `/assets/${asset.id}`, { token: owner.token }),
            ),
          );
          statuses.push(...answers.map((res) => res.status));
        });
        expect(statuses).to.deep.equal(Array(40).fill(200));
        expect(peak['workspace-web']).to.be.within(1, 2);
        expect(peak).to.not.have.property('workspace-web-boss');
        // pg-boss still sends through the shared pool: an invitation enqueues its e-mail job.
        const emails = async () => (await db.raw(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = ?`, [invitationEmailJob.name])).rows[0].n as number;
        const before = await emails();
        const invited = await server.request('post', `/organizations/${organizationId}/invitations`, {
          token: owner.token,
          body: { email: 'budget@example.test', role: 'member' },
        });
        expect(invited.status, JSON.stringify(invited.body)).to.equal(201);
        expect(await emails()).to.equal(before + 1);
      } finally {
        await server.stop();
      }
    });
  });
});
