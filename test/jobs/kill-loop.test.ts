import { expect } from 'chai';
import { assetEnrichmentJob, assetImportJob } from '../../src/assets/jobs.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import type { Db } from '../../src/db/knex.ts';
import { generationJob } from '../../src/generations/jobs.ts';
import { invitationEmailJob, invitationEmailKey } from '../../src/invitations/jobs.ts';
import { meteredCallJob } from '../../src/metering/index.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { testDataDir } from '../support/config.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { ChildRun } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { sleep, startUpstream, type FakeUpstream } from '../support/upstream.ts';
import { createDb, isolatedDatabase, spawnWorker } from './support.ts';

/**
 * Proof under faults: 1,000 jobs of five kinds (invitation e-mails, link imports, enrichment,
 * generations, metered social reads) run while worker PROCESSES are SIGKILLed in a loop — every ~2 s the oldest of
 * three is killed and a replacement started — until every job reached a final state. Then the
 * database is counted: each job completed exactly once, and no side effect happened twice (one
 * e-mail per invitation, one import and one enrichment per asset, one asset and one capture per
 * generation, one capture per read, a ledger that reconciles).
 *
 * The jobs: 200 invitation e-mails, 150 link imports (each hands over to one enrichment), 150
 * documents created with content (one enrichment each), 150 generations (each stores one asset,
 * which is enriched too), 50 metered social reads (the request waits for its worker):
 * 200 + 2·150 + 150 + 2·150 + 50 = 1,000.
 */
describe('jobs: workers SIGKILLed in a loop under 1,000 jobs', function () {
  this.timeout(240_000);
  const INVITATIONS = 200;
  const READS = 50;
  const IMPORTS = 150;
  const DOCUMENTS = 150;
  const GENERATIONS = 150;
  const GENERATION_CREDITS = 4; // a sandbox image
  const QUEUES = [invitationEmailJob.name, assetImportJob.name, assetEnrichmentJob.name, generationJob.name, meteredCallJob.name];
  const EXPECTED: Record<string, number> = {
    [invitationEmailJob.name]: INVITATIONS,
    [assetImportJob.name]: IMPORTS,
    [assetEnrichmentJob.name]: IMPORTS + DOCUMENTS + GENERATIONS,
    [generationJob.name]: GENERATIONS,
    [meteredCallJob.name]: READS,
  };
  const TOTAL = Object.values(EXPECTED).reduce((a, b) => a + b, 0);

  let url: string;
  let db: Db;
  let server: TestServer;
  let upstream: FakeUpstream;
  let alice: TestUser;
  /** A few organizations, the jobs spread over them (per-organization group concurrency caps one tenant's share of a queue). */
  let orgs: string[];
  const orgOf = (i: number) => orgs[i % orgs.length]!;
  const workers = new Set<ChildRun>();
  /** When each worker printed `worker started` (it works jobs from then on). */
  const readyAt = new Map<ChildRun, number>();

  before(async () => {
    // A little latency on every download, so kills land mid-import too.
    upstream = await startUpstream(
      Object.fromEntries(
        Array.from({ length: IMPORTS }, (_, i) => [
          `/files/${i}.txt`,
          (_req: unknown, res: import('node:http').ServerResponse) =>
            void setTimeout(() => {
              res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
              res.end(`file number ${i}\n`.repeat(20));
            }, 50),
        ]),
      ),
    );
    url = await isolatedDatabase();
    db = createDb(url, { max: 3 });
    // A dead worker's attempt is retried 10 s after its last heartbeat (pg-boss's minimum), at once
    // and as often as it takes: the loop may kill the same job's worker more than once.
    const boss = createBoss(url, 'release');
    await boss.start();
    try {
      for (const queue of QUEUES) await boss.updateQueue(queue, { heartbeatSeconds: 10, retryLimit: 50, retryDelay: 0, retryBackoff: false });
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
    // A read waits for its worker however many times the loop kills it (each kill costs ~10 s).
    server = await startTestServer({ READ_TIMEOUT_MS: '120000' }, { databaseUrl: url });
    alice = newUser();
    orgs = [];
    for (let i = 0; i < 4; i++) orgs.push(await createOrganization(server, alice));
    for (const org of orgs)
      await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 10_000, description: 'Test credits' }));
  });
  after(async () => {
    for (const worker of workers) kill(worker);
    await Promise.all([...workers].map((worker) => worker.exited));
    await server?.stop();
    await db?.destroy();
    await upstream?.close();
  });

  const startWorker = () => {
    const worker = spawnWorker(url, {
      DATA_DIR: testDataDir(),
      OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`,
      LOG_LEVEL: 'info', // for `worker started`
      // A read's budget counts from its acceptance, and a job whose workers die repeatedly waits ~10 s each time.
      READ_TIMEOUT_MS: '120000',
      // Crash windows: the side effect is recorded, then the attempt lingers before it completes.
      EMAIL_SANDBOX_DELAY_MS: '100',
      GENERATION_SANDBOX_DELAY_MS: '100',
    });
    workers.add(worker);
    worker.waitForOutput(/"worker started"/).then(
      () => readyAt.set(worker, Date.now()),
      () => undefined,
    );
    void worker.exited.then(() => {
      workers.delete(worker);
      readyAt.delete(worker);
    });
    return worker;
  };
  const kill = (worker: ChildRun) => {
    if (worker.child.exitCode === null && worker.child.signalCode === null) process.kill(-worker.child.pid!, 'SIGKILL');
  };

  /** Jobs of the five queues by state. */
  const jobStates = async () => {
    const rows: { name: string; state: string; n: number }[] = await db('pgboss.job')
      .whereIn('name', QUEUES)
      .groupBy('name', 'state')
      .select('name', 'state', db.raw('count(*)::int AS n'));
    return rows;
  };

  /** Runs `work` over `items`, `width` at a time. */
  const pool = async <T>(items: T[], width: number, work: (item: T) => Promise<void>) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: width }, async () => {
        while (next < items.length) await work(items[next++]!);
      }),
    );
  };

  it('every job completes exactly once and no side effect is repeated', async () => {
    const started = Date.now();
    for (let i = 0; i < 3; i++) startWorker();

    // The load, through the real API, while the kill loop runs.
    const created = { invitations: [] as string[], imports: [] as string[], documents: [] as string[], generations: [] as string[], reads: 0 };
    type Work = () => Promise<void>;
    const expect201 = (what: string, res: { status: number; body: any }) => {
      if (res.status !== 201) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const work: Work[] = [];
    for (let i = 0; i < Math.max(INVITATIONS, IMPORTS, DOCUMENTS, GENERATIONS); i++) {
      if (i < INVITATIONS)
        work.push(async () => {
          const body = expect201(
            'invitation',
            await server.request('post', `/organizations/${orgOf(i)}/invitations`, {
              token: alice.token,
              body: { email: `guest-${i}@example.test`, role: 'member' },
            }),
          );
          created.invitations.push(body.invitation.id);
        });
      if (i < IMPORTS)
        work.push(async () => {
          const body = expect201(
            'import',
            await server.request('post', '/assets/imports/link', {
              token: alice.token,
              body: { organization_id: orgOf(i), url: `${upstream.url}/files/${i}.txt` },
            }),
          );
          created.imports.push(body.id);
        });
      if (i < DOCUMENTS)
        work.push(async () => {
          const body = expect201(
            'document',
            await server.request('post', '/assets', {
              token: alice.token,
              body: { organization_id: orgOf(i), type: 'document', title: `Document ${i}`, content: `Document number ${i}. `.repeat(10) },
            }),
          );
          created.documents.push(body.id);
        });
      if (i < GENERATIONS)
        work.push(async () => {
          const body = expect201(
            'generation',
            await server.request('post', '/generations', {
              token: alice.token,
              body: { organization_id: orgOf(i), kind: 'image', prompt: `A lighthouse, take ${i}` },
            }),
          );
          created.generations.push(body.generation.id);
        });
    }
    // Reads hold their request open until the worker settles them: a pool of their own.
    const reads = pool(
      Array.from({ length: READS }, (_, i) => i),
      25,
      async (i) => {
        const res = await server.request('post', '/social/net2_profile', {
          token: alice.token,
          body: { organization_id: orgOf(i), input: { username: `reader${i}` } },
        });
        if (res.status !== 200) {
          const call = await db('metered_calls')
            .whereRaw(`input->>'username' = ?`, [`reader${i}`])
            .first();
          const job = await db('pgboss.job').where({ name: meteredCallJob.name }).whereRaw(`data->>'call_id' = ?`, [call?.id]).first();
          throw new Error(`read: ${res.status} ${JSON.stringify(res.body)} ${JSON.stringify(call)} ${JSON.stringify(job)}`);
        }
        created.reads++;
      },
    );
    let loadDone = false;
    let loadMs = 0;
    let loadError: unknown;
    const load = Promise.all([pool(work, 6, (run) => run()), reads]).then(
      () => {
        loadDone = true;
        loadMs = Date.now() - started;
      },
      (error: unknown) => {
        loadError = error;
      },
    );

    // The kill loop: every 2 s the oldest worker is SIGKILLed and a replacement started, until
    // every job of the five queues is in a final state. The victim must have been working for at
    // least a second (else that tick kills nobody): on a busy machine a worker takes seconds to
    // start, and killing workers that never got to work would prove nothing and finish nothing.
    let kills = 0;
    let skipped = 0;
    const finalStates = new Set(['completed', 'failed', 'cancelled']);
    const allFinal = async () => {
      if (!loadDone) return false;
      const states = await jobStates();
      return states.filter((s) => finalStates.has(s.state)).reduce((sum, s) => sum + s.n, 0) === TOTAL;
    };
    for (;;) {
      await sleep(2000);
      if (loadError) throw loadError;
      if (await allFinal()) break;
      if (Date.now() - started > 200_000) throw new Error(`not done after 200 s (${kills} kills): ${JSON.stringify(await jobStates())}`);
      const oldest = [...workers][0]!;
      if (Date.now() - (readyAt.get(oldest) ?? Infinity) < 1000) {
        skipped++;
        continue;
      }
      kill(oldest);
      await oldest.exited;
      kills++;
      startWorker();
    }
    await load;
    const loopMs = Date.now() - started;

    // Every job of each queue completed, exactly the expected number: none failed, none twice.
    const states = await jobStates();
    expect(Object.fromEntries(states.map((s) => [`${s.name}:${s.state}`, s.n]))).to.deep.equal(
      Object.fromEntries(QUEUES.map((queue) => [`${queue}:completed`, EXPECTED[queue]])),
    );
    // The loop really killed workers mid-work: some jobs needed more than one attempt.
    const retried = await db('pgboss.job').whereIn('name', QUEUES).where('retry_count', '>', 0).count({ n: '*' }).first();
    expect(kills, 'workers killed').to.be.at.least(5);
    expect(Number(retried?.n), 'jobs retried after a kill').to.be.above(0);

    // Invitations: one e-mail each in the sandbox outbox.
    expect(created.invitations).to.have.length(INVITATIONS);
    const mails: { key: string; n: number }[] = await db('email_outbox')
      .whereIn(
        'idempotency_key',
        created.invitations.map((id) => invitationEmailKey(id)),
      )
      .groupBy('idempotency_key')
      .select('idempotency_key as key', db.raw('count(*)::int AS n'));
    expect(mails).to.have.length(INVITATIONS);
    expect(mails.filter((m) => m.n !== 1)).to.deep.equal([]);

    // Link imports: one transition to `success` (one `asset.imported` activity) and one enrichment each.
    expect(created.imports).to.have.length(IMPORTS);
    const imports = await db('assets').whereIn('id', created.imports).select('upload_file_state', 'enrichment_state');
    expect(imports.filter((a) => a.upload_file_state !== 'success' || a.enrichment_state !== 'success')).to.deep.equal([]);
    expect(await activityCounts('asset.imported', created.imports)).to.deep.equal({ assets: IMPORTS, entries: IMPORTS });

    // Generations: succeeded, one asset and one capture of the quoted credits each.
    expect(created.generations).to.have.length(GENERATIONS);
    const generations = await db('generations').whereIn('id', created.generations).select('id', 'status', 'asset_ids', 'call_id', 'credits_charged');
    expect(generations.filter((g) => g.status !== 'succeeded' || g.asset_ids.length !== 1 || g.credits_charged !== GENERATION_CREDITS)).to.deep.equal([]);
    const generatedAssets = await db('assets').whereIn('generation_id', created.generations).select('id', 'generation_id');
    expect(generatedAssets).to.have.length(GENERATIONS);
    expect(new Set(generatedAssets.map((a) => a.generation_id)).size).to.equal(GENERATIONS);
    const ledger: { kind: string; n: number; total: number }[] = await db('credit_ledger_entries as e')
      .join('credit_holds as h', 'h.id', 'e.hold_id')
      .whereIn(
        'h.run_id',
        generations.map((g) => `metered-call:${g.call_id}`),
      )
      .groupBy('e.kind')
      .select('e.kind', db.raw('count(*)::int AS n'), db.raw('sum(e.amount)::int AS total'));
    expect(Object.fromEntries(ledger.map((l) => [l.kind, { n: l.n, total: l.total }]))).to.deep.equal({
      hold: { n: GENERATIONS, total: GENERATIONS * GENERATION_CREDITS },
      capture: { n: GENERATIONS, total: GENERATIONS * GENERATION_CREDITS },
    });
    // Metered reads: each answered (200 above), succeeded and captured once.
    expect(created.reads).to.equal(READS);
    const calls = await db('metered_calls').whereIn('organization_id', orgs).where({ operation: 'net2_profile' }).select('id', 'status', 'credits_charged');
    expect(calls).to.have.length(READS);
    expect(calls.filter((c) => c.status !== 'succeeded' || c.credits_charged < 1)).to.deep.equal([]);
    const readCredits = calls.reduce((sum, c) => sum + Number(c.credits_charged), 0);
    const readCaptures = await db('credit_ledger_entries as e')
      .join('credit_holds as h', 'h.id', 'e.hold_id')
      .whereIn(
        'h.run_id',
        calls.map((c) => `metered-call:${c.id}`),
      )
      .where('e.kind', 'capture')
      .first(db.raw('count(*)::int AS n'), db.raw('sum(e.amount)::int AS total'));
    expect(readCaptures).to.deep.equal({ n: READS, total: readCredits });
    // No hold of the organization was captured twice.
    const perHold: { n: number }[] = await db('credit_ledger_entries')
      .whereIn('organization_id', orgs)
      .where({ kind: 'capture' })
      .groupBy('hold_id')
      .select(db.raw('count(*)::int AS n'));
    expect(perHold.filter((h) => h.n !== 1)).to.deep.equal([]);

    // Enrichment: every asset (imported, created, generated) measured once.
    const enriched = [...created.imports, ...created.documents, ...generatedAssets.map((a) => a.id)];
    expect(enriched).to.have.length(IMPORTS + DOCUMENTS + GENERATIONS);
    const states2 = await db('assets').whereIn('id', enriched).groupBy('enrichment_state').select('enrichment_state', db.raw('count(*)::int AS n'));
    expect(states2).to.deep.equal([{ enrichment_state: 'success', n: enriched.length }]);
    expect(await activityCounts('asset.enriched', enriched)).to.deep.equal({ assets: enriched.length, entries: enriched.length });
    const enrichJobs: { n: number }[] = await db('pgboss.job')
      .where({ name: assetEnrichmentJob.name })
      .groupByRaw(`data->>'asset_id'`)
      .select(db.raw('count(*)::int AS n'));
    expect(enrichJobs).to.have.length(enriched.length);
    expect(enrichJobs.filter((j) => j.n !== 1)).to.deep.equal([]);

    // Credits: the ledger reconciles with the balance; exactly the generations were spent, nothing held.
    for (const org of orgs) expect(await reconcileCredits(db, org), `ledger of ${org}`).to.deep.equal([]);
    const balance = await db('credit_balances')
      .whereIn('organization_id', orgs)
      .first(db.raw('sum(captured)::int AS captured'), db.raw('sum(held)::int AS held'));
    expect({ captured: Number(balance.captured), held: Number(balance.held) }).to.deep.equal({
      captured: GENERATIONS * GENERATION_CREDITS + readCredits,
      held: 0,
    });

    console.log(
      `    kill loop: ${TOTAL} jobs, ${kills} workers killed (${skipped} ticks skipped), ${retried?.n} jobs retried, load done after ${loadMs} ms, all final after ${loopMs} ms`,
    );
  });

  /** How many assets of `ids` have an activity entry `action`, and how many entries there are. */
  async function activityCounts(action: string, ids: string[]) {
    const row = await db('activity_events')
      .where({ action, subject_type: 'asset' })
      .whereIn('subject_id', ids)
      .first(db.raw('count(DISTINCT subject_id)::int AS assets'), db.raw('count(*)::int AS entries'));
    return row;
  }
});
