import { expect } from 'chai';
import { assetEnrichmentJob, assetImportJob } from '../../src/assets/jobs.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import type { Db } from '../../src/db/knex.ts';
import { generationJob } from '../../src/generations/jobs.ts';
import { invitationEmailJob, invitationEmailKey } from '../../src/invitations/jobs.ts';
import { meteredCallJob } from '../../src/metering/index.ts';
import { chatRunJob } from '../../src/conversations/jobs.ts';
import { scheduledTaskFinishJob, scheduledTaskRunJob } from '../../src/scheduled-tasks/jobs.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { testDataDir } from '../support/config.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { ChildRun } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { sleep, startUpstream, type FakeUpstream } from '../support/upstream.ts';
import { createDb, eventually, isolatedDatabase, spawnWorker } from './support.ts';

/**
 * Proof under faults: about 1,000 jobs of every kind (invitation e-mails, link imports, enrichment,
 * generations, metered social reads, chat turns, scheduled runs) run while worker PROCESSES are
 * SIGKILLed — or frozen with SIGSTOP and resumed with SIGCONT after their jobs were retried
 * elsewhere — in a loop: every ~2 s the oldest of three is hit and a replacement started, until
 * every job reached a final state. Then the database is counted: each job completed exactly once,
 * and no side effect happened twice (one e-mail per invitation, one import and one enrichment per
 * asset, one asset and one capture per generation, one capture per read, one answer and one capture
 * per chat turn, one conversation per scheduled run), no hold is open, the ledger reconciles, and
 * the history has every attempt (killed ones included) with the worker that ran it.
 *
 * The jobs: 120 invitation e-mails, 150 link imports (each hands over to one enrichment), 150
 * documents created with content (one enrichment each), 150 generations (each stores one asset,
 * which its own worker measures as enrichment would: no job of its own), 50 metered social reads
 * (the request waits for its worker), 40 chat turns, 20 scheduled runs (a start job, its chat turn,
 * the finish continuation): 120 + 2·150 + 150 + 150 + 50 + 40 + 3·20 = 870.
 */
describe('jobs: workers SIGKILLed in a loop under 1,000 jobs', function () {
  this.timeout(300_000);
  const INVITATIONS = 120;
  const CHATS = 40;
  const SCHEDULED = 20;
  const READS = 50;
  const IMPORTS = 150;
  const DOCUMENTS = 150;
  const GENERATIONS = 150;
  const GENERATION_CREDITS = 4; // a sandbox image
  const QUEUES = [
    invitationEmailJob.name,
    assetImportJob.name,
    assetEnrichmentJob.name,
    generationJob.name,
    meteredCallJob.name,
    chatRunJob.name,
    scheduledTaskRunJob.name,
    scheduledTaskFinishJob.name,
  ];
  const EXPECTED: Record<string, number> = {
    [invitationEmailJob.name]: INVITATIONS,
    [assetImportJob.name]: IMPORTS,
    // A generated asset is measured by its generation's worker: no enrichment job.
    [assetEnrichmentJob.name]: IMPORTS + DOCUMENTS,
    [generationJob.name]: GENERATIONS,
    [meteredCallJob.name]: READS,
    [chatRunJob.name]: CHATS + SCHEDULED,
    [scheduledTaskRunJob.name]: SCHEDULED,
    [scheduledTaskFinishJob.name]: SCHEDULED,
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
  /** Workers frozen with SIGSTOP, until they are resumed. */
  const frozen = new Set<ChildRun>();
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
    for (const worker of [...workers, ...frozen]) kill(worker);
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
      CHAT_SANDBOX_DELAY_MS: '20',
      // An enrichment pauses after each recorded stage, so kills land between its stages too (the retry resumes).
      ASSET_ENRICHMENT_STAGE_DELAY_MS: '50',
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
    const created = {
      invitations: [] as string[],
      imports: [] as string[],
      documents: [] as string[],
      generations: [] as string[],
      chats: [] as string[],
      scheduled: [] as string[],
      reads: 0,
    };
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
    // Chat turns (a conversation each) and scheduled runs (triggered runs of one task per organization).
    const tasks: string[] = [];
    for (const org of orgs) {
      const task = expect201(
        'scheduled task',
        await server.request('post', '/scheduled-tasks', {
          token: alice.token,
          body: { organization_id: org, title: 'Morning brief', prompt: 'Summarise the news in one line.', schedule: { cron: '0 6 * * *', timezone: 'UTC' } },
        }),
      );
      tasks.push(task.scheduled_task.id);
    }
    for (let i = 0; i < CHATS; i++)
      work.push(async () => {
        const conversation = expect201(
          'conversation',
          await server.request('post', '/conversations', { token: alice.token, body: { organization_id: orgOf(i), title: `Chat ${i}` } }),
        );
        const id = conversation.id ?? conversation.conversation?.id;
        expect201('message', await server.request('post', `/conversations/${id}/messages`, { token: alice.token, body: { content: `Question number ${i}?` } }));
        const run = expect201(
          'run',
          await server.request('post', `/conversations/${id}/run`, { token: alice.token, body: { model: 'sandbox-chat', max_credits: 20 } }),
        );
        created.chats.push(run.run.id);
      });
    for (let i = 0; i < SCHEDULED; i++)
      work.push(async () => {
        const res = await server.request('post', `/scheduled-tasks/${tasks[i % tasks.length]}/trigger`, { token: alice.token });
        if (res.status !== 202) throw new Error(`trigger: ${res.status} ${JSON.stringify(res.body)}`);
        created.scheduled.push(res.body.run.id);
      });
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
    let freezes = 0;
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
      // Every third hit freezes the worker instead: its jobs are retried elsewhere once its heartbeat is
      // stale (10 s), then it is resumed (and killed later as the oldest) — whatever it then tries to write is fenced off.
      if ((kills + freezes) % 3 === 2) {
        workers.delete(oldest);
        frozen.add(oldest);
        process.kill(-oldest.child.pid!, 'SIGSTOP');
        freezes++;
        startWorker();
        void sleep(12_000).then(() => {
          if (oldest.child.exitCode === null && oldest.child.signalCode === null) process.kill(-oldest.child.pid!, 'SIGCONT');
          frozen.delete(oldest);
          workers.add(oldest);
        });
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
    // Five hits at least, kills and freezes alike (a fast machine finishes the load in few ticks).
    expect(kills + freezes, 'workers killed or frozen').to.be.at.least(5);
    expect(kills, 'workers killed').to.be.at.least(3);
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
    expect(enrichJobs).to.have.length(IMPORTS + DOCUMENTS);
    expect(enrichJobs.filter((j) => j.n !== 1)).to.deep.equal([]);

    // Chat turns: each answered once (one assistant message in its conversation) and captured once (per-hold check above).
    expect(created.chats).to.have.length(CHATS);
    const chats = await db('chat_runs').whereIn('id', created.chats).select('id', 'conversation_id', 'status', 'answer_message_id', 'credits_charged');
    expect(chats.filter((c) => c.status !== 'succeeded' || !c.answer_message_id || !(c.credits_charged > 0))).to.deep.equal([]);
    const answers: { n: number }[] = await db('conversation_messages')
      .whereIn(
        'conversation_id',
        chats.map((c) => c.conversation_id),
      )
      .where({ role: 'assistant' })
      .groupBy('conversation_id')
      .select(db.raw('count(*)::int AS n'));
    expect(answers).to.have.length(CHATS);
    expect(answers.filter((a) => a.n !== 1)).to.deep.equal([]);

    // Scheduled runs: each succeeded, with exactly one conversation of its own (no orphan from a retried start) and its turn's credits.
    expect(created.scheduled).to.have.length(SCHEDULED);
    const runs = await db('scheduled_task_runs as r')
      .join('chat_runs as c', 'c.id', 'r.chat_run_id')
      .whereIn('r.id', created.scheduled)
      .select('r.status', 'r.credits_used', 'r.conversation_id', 'c.credits_charged', 'c.status as turn');
    expect(runs.filter((r) => r.status !== 'succeeded' || r.turn !== 'succeeded' || r.credits_used !== r.credits_charged)).to.deep.equal([]);
    expect(new Set(runs.map((r) => r.conversation_id)).size).to.equal(SCHEDULED);
    const scheduledConversations = await db('conversations').whereIn('organization_id', orgs).whereNotNull('schedule_id').count('* as n').first();
    expect(Number(scheduledConversations?.n)).to.equal(SCHEDULED);
    const turnCredits = (await db('chat_runs').whereIn('organization_id', orgs).sum('credits_charged as n').first())?.n;

    // History: every attempt of every job is there (killed and frozen ones included), each with the worker that ran it (an
    // attempt whose worker died within milliseconds of fetching it, before its handler began, is `lost` with no worker), and
    // each has ended (the sweeps close a lost worker's open attempts once its heartbeat is stale).
    const openAttempts = () =>
      db('job_attempts as a')
        .leftJoin('job_workers as w', 'w.id', 'a.worker_id')
        .whereNull('a.outcome')
        .select('a.job_id', 'a.queue', 'a.attempt', 'a.started_at', 'w.pid', 'w.lost_at', 'w.stopped_at', 'w.last_heartbeat_at');
    await eventually('every attempt has ended', async () => (await openAttempts()).length === 0, { timeoutMs: 60_000 }).catch(async (error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify((await openAttempts()).slice(0, 5))}`);
    });
    const gaps: { id: string; retry_count: number; recorded: number; anonymous: number; name: string; attempts: unknown[] }[] = (
      await db.raw(
        `SELECT j.id, j.retry_count,
                count(DISTINCT a.attempt) FILTER (WHERE a.outcome <> 'deferred')::int AS recorded,
                count(*) FILTER (WHERE a.worker_id IS NULL AND a.outcome <> 'lost')::int AS anonymous,
                j.name, json_agg(json_build_object('attempt', a.attempt, 'outcome', a.outcome, 'worker', a.worker_id, 'error', a.error->>'message') ORDER BY a.started_at) AS attempts
           FROM pgboss.job j LEFT JOIN job_attempts a ON a.job_id = j.id
          WHERE j.name = ANY(?::text[])
          GROUP BY j.id, j.retry_count, j.name
         HAVING count(DISTINCT a.attempt) FILTER (WHERE a.outcome <> 'deferred') <> j.retry_count + 1 OR count(*) FILTER (WHERE a.worker_id IS NULL AND a.outcome <> 'lost') > 0`,
        [QUEUES],
      )
    ).rows;
    expect(gaps, `jobs whose history misses an attempt or its worker: ${JSON.stringify(gaps.slice(0, 3))}`).to.deep.equal([]);

    // Credits: the ledger reconciles with the balance; exactly the generations, reads and chat turns were spent, nothing held.
    for (const org of orgs) expect(await reconcileCredits(db, org), `ledger of ${org}`).to.deep.equal([]);
    const balance = await db('credit_balances')
      .whereIn('organization_id', orgs)
      .first(db.raw('sum(captured)::int AS captured'), db.raw('sum(held)::int AS held'));
    expect({ captured: Number(balance.captured), held: Number(balance.held) }).to.deep.equal({
      captured: GENERATIONS * GENERATION_CREDITS + readCredits + Number(turnCredits),
      held: 0,
    });

    console.log(
      `    kill loop: ${TOTAL} jobs, ${kills} workers killed, ${freezes} frozen and resumed (${skipped} ticks skipped), ${retried?.n} jobs retried, load done after ${loadMs} ms, all final after ${loopMs} ms`,
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
