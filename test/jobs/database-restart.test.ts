import { expect } from 'chai';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { assetEnrichmentJob } from '../../src/assets/jobs.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import { invitationEmailJob, invitationEmailKey } from '../../src/invitations/jobs.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { release } from '../../src/app/release.ts';
import { testDataDir } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { spawnWeb, type ChildRun, type WebChild } from '../support/processes.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { sleep } from '../support/upstream.ts';
import { createDb, logLines, spawnWorker } from './support.ts';

/**
 * The database restarted under load. A PostgreSQL server of this file's own (the run's shared
 * server is never stopped), a web and a worker process on it, concurrent API writes and jobs
 * enqueued by them. Postgres is stopped (fast shutdown) for ~3 s while the clients keep going,
 * then started again on the same data directory and port. Without restarting either process:
 * during the outage writes are refused with 503 `unavailable` (never a hang, never a 500) and
 * /readyz says not ready; afterwards both serve again, every acknowledged write is in the
 * database, every job enqueued before or after the outage completes, and the worker logged a
 * handful of error lines, not a storm.
 */
describe('jobs: the database restarted under load', function () {
  this.timeout(90_000);
  const QUEUES = [assetEnrichmentJob.name, invitationEmailJob.name];
  const CLIENT_TIMEOUT_MS = 5_000;
  const log = createLogger({ LOG_LEVEL: 'silent' }, 'restart-test');
  let dir: string;
  let postgres: EmbeddedDatabase | undefined;
  let url: string;
  let web: WebChild | undefined;
  let worker: ChildRun | undefined;
  let alice: TestUser;
  let org: string;

  const startPostgres = () =>
    startEmbeddedPostgres({ dir, database: 'restart', log, flags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] });

  before(async function () {
    // A cluster of its own (initdb, migrations) and two processes: slow on a busy machine.
    this.timeout(180_000);
    dir = await mkdtemp(path.join(tmpdir(), 'workspace-restart-'));
    await chmod(dir, 0o755);
    postgres = await startPostgres();
    url = postgres.url;
    await release(url, log);
    // A worker killed by the outage mid-job leaves it active: retried 10 s after its last heartbeat,
    // and a failed attempt is retried after a second instead of the production backoff.
    const boss = createBoss(url, 'release');
    await boss.start();
    try {
      for (const queue of QUEUES) await boss.updateQueue(queue, { heartbeatSeconds: 10, retryDelay: 1, retryBackoff: false });
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
    // Six clients write as fast as the web answers: on a quiet machine that is more than the default
    // per-caller rate limit (600 a minute), whose 429s are not what this test is about.
    web = await spawnWeb({ DATABASE_URL: url, DATA_DIR: testDataDir(), LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '100000' });
    worker = spawnWorker(url, {
      DATA_DIR: testDataDir(),
      LOG_LEVEL: 'info',
      WORKER_POLL_INTERVAL_SECONDS: '1',
      WORKER_DB_RETRY_MAX_SECONDS: '1',
    });
    await worker.waitForOutput(/"worker started"/);
    alice = newUser();
    const res = await call('post', '/organizations', { name: 'Restart Co' });
    expect(res.status).to.equal(201);
    org = res.body.organization.id;
  });
  after(async () => {
    if (worker && worker.child.exitCode === null && worker.child.signalCode === null) process.kill(-worker.child.pid!, 'SIGKILL');
    await worker?.exited;
    if (web && web.run.child.exitCode === null && web.run.child.signalCode === null) web.run.child.kill('SIGKILL');
    await web?.run.exited;
    await postgres?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** One API call as a client with a deadline would make it; a hang past the deadline is status 0. */
  async function call(method: string, route: string, body?: unknown, token: string | null = alice.token) {
    const started = Date.now();
    try {
      const res = await fetch(`${web!.url}${route}`, {
        method: method.toUpperCase(),
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      });
      const text = await res.text();
      let parsed: any = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: kept as text for the assertion to show
      }
      return { status: res.status, body: parsed, ms: Date.now() - started };
    } catch (error) {
      return { status: 0, body: { error: String(error) }, ms: Date.now() - started };
    }
  }

  it('web and worker recover by themselves; no acknowledged write is lost and every job completes', async () => {
    const acknowledged = { canvases: [] as string[], skills: [] as string[], assets: [] as string[], invitations: [] as string[] };
    const refused: { status: number; code: unknown; message: unknown }[] = [];
    let slowest = 0;
    let stopLoad = false;
    let n = 0;
    /** A client writing in a loop: canvases, skills, documents (an enrichment job each) and invitations (an e-mail job each). */
    const client = async (kind: keyof typeof acknowledged) => {
      while (!stopLoad) {
        const i = n++;
        const res =
          kind === 'canvases'
            ? await call('post', '/canvases', { organization_id: org, title: `Canvas ${i}` })
            : kind === 'skills'
              ? await call('post', '/skills', { organization_id: org, name: `Skill ${i}`, description: '', body: 'x' })
              : kind === 'assets'
                ? await call('post', '/assets', { organization_id: org, type: 'document', title: `Doc ${i}`, content: `Document ${i}` })
                : await call('post', `/organizations/${org}/invitations`, { email: `guest-${i}@example.test`, role: 'member' });
        slowest = Math.max(slowest, res.ms);
        if (res.status === 201) {
          const id = kind === 'skills' ? res.body.skill.id : kind === 'invitations' ? res.body.invitation.id : res.body.id;
          acknowledged[kind].push(id);
        } else {
          refused.push({ status: res.status, code: res.body?.code, message: res.body?.message ?? res.body?.error });
          await sleep(100); // a client backing off a little
        }
      }
    };
    /** /readyz answers, by when they were asked. */
    const readiness: { at: number; status: number; message?: string }[] = [];
    let stopProbe = false;
    const probe = (async () => {
      while (!stopProbe) {
        const at = Date.now();
        const res = await call('get', '/readyz', undefined, null);
        readiness.push({ at, status: res.status, message: res.body?.message });
        await sleep(200);
      }
    })();

    const kinds = ['canvases', 'skills', 'assets', 'invitations', 'canvases', 'assets'] as const;
    const load = Promise.all(kinds.map((kind) => client(kind)));
    // Load running: writes acknowledged and /readyz answered ready (on a busy machine that takes longer than the 2 s minimum).
    await sleep(2_000);
    await eventually(
      'writes are acknowledged and /readyz is ready before the outage',
      async () => count(acknowledged).total >= 20 && readiness.some((r) => r.status === 200),
      {
        timeoutMs: 30_000,
      },
    );
    const before = { ...count(acknowledged) };
    const workerLogFrom = worker!.stdout().length;

    // The outage: a fast shutdown, ~3 s down while the clients keep trying.
    const downAt = Date.now();
    await postgres!.stop();
    postgres = undefined;
    const stoppedAt = Date.now();
    await sleep(3_000);
    const restartAt = Date.now();
    postgres = await startPostgres();
    const upAt = Date.now();
    expect(postgres.url, 'the same port and credentials').to.equal(url);

    // Both processes serve again without being restarted.
    await eventually('/readyz reports ready again', async () => readiness.some((r) => r.at > upAt && r.status === 200), { timeoutMs: 20_000 });
    const refusedBeforeRecovery = refused.length;
    await eventually('writes are acknowledged again', async () => count(acknowledged).total > before.total + 20 && refused.length === refusedBeforeRecovery, {
      timeoutMs: 20_000,
    });
    stopLoad = true;
    await load;
    stopProbe = true;
    await probe;

    expect(web!.run.child.exitCode, 'the web process kept running').to.equal(null);
    expect(worker!.child.exitCode, 'the worker kept running').to.equal(null);
    // Refusals: only 503 unavailable, answered in time (a hang would show as status 0).
    expect(refused.length, 'writes refused during the outage').to.be.above(0);
    expect(refused.filter((r) => r.status !== 503 || r.code !== 'unavailable')).to.deep.equal([]);
    expect(slowest, 'slowest answer (ms)').to.be.below(CLIENT_TIMEOUT_MS);
    // Readiness: ready, then not ready (asked while the server was down: 503), then ready for good.
    const runs = readiness.map((r) => r.status).filter((status, i, all) => i === 0 || all[i - 1] !== status);
    expect(runs, `readiness over time: ${JSON.stringify(readiness.map((r) => [r.at - downAt, r.status, r.message]))}`).to.deep.equal([200, 503, 200]);
    const whileDown = readiness.filter((r) => r.at >= stoppedAt && r.at < restartAt);
    expect(whileDown.length, 'readiness probes while the server was down').to.be.above(0);
    expect(whileDown.filter((r) => r.status !== 503)).to.deep.equal([]);

    const db = createDb(url, { max: 2 });
    try {
      // Every acknowledged write is in the database.
      const total = count(acknowledged);
      expect(total.total).to.be.above(before.total);
      for (const [table, ids] of [
        ['canvases', acknowledged.canvases],
        ['skills', acknowledged.skills],
        ['assets', acknowledged.assets],
        ['invitations', acknowledged.invitations],
      ] as const) {
        const found = await db(table).whereIn('id', ids).pluck('id');
        expect(found.length, `acknowledged ${table} in the database`).to.equal(ids.length);
      }

      // Every job enqueued before or after the outage completes: one per acknowledged document and
      // invitation. (A write refused while its commit raced the shutdown may have committed too:
      // its job must complete as well, so every job of the queues is counted, not only these.)
      await eventually(
        'every job of the queues completed',
        async () => {
          const pending = await db('pgboss.job').whereIn('name', QUEUES).whereNot('state', 'completed').count({ n: '*' }).first();
          return Number(pending?.n) === 0;
        },
        { everyMs: 500, timeoutMs: 40_000 },
      );
      const completed = async (queue: string, field: string, ids: string[]) =>
        Number((await db('pgboss.job').where({ name: queue, state: 'completed' }).whereRaw(`data->>'${field}' = ANY(?)`, [ids]).count({ n: '*' }).first())?.n);
      expect(await completed(assetEnrichmentJob.name, 'asset_id', acknowledged.assets)).to.equal(acknowledged.assets.length);
      expect(await completed(invitationEmailJob.name, 'invitation_id', acknowledged.invitations)).to.equal(acknowledged.invitations.length);
      const enriched = await db('assets')
        .whereIn('id', acknowledged.assets)
        .groupBy('enrichment_state')
        .select('enrichment_state', db.raw('count(*)::int AS n'));
      expect(enriched).to.deep.equal([{ enrichment_state: 'success', n: acknowledged.assets.length }]);
      const mails = await db('email_outbox')
        .whereIn(
          'idempotency_key',
          acknowledged.invitations.map((id) => invitationEmailKey(id)),
        )
        .count({ n: '*' })
        .first();
      expect(Number(mails?.n)).to.equal(acknowledged.invitations.length);
    } finally {
      await db.destroy();
    }

    // No error storm: a handful of error lines for the whole outage from the worker, and from the web
    // process too (its refusals are 503s, logged as warnings).
    const errors = logLines(worker!.stdout().slice(workerLogFrom)).filter((line) => line.level >= 50);
    expect(
      errors.length,
      `worker error lines: ${JSON.stringify(errors.map((e) => [e.msg, (e as { err?: { message?: string } }).err?.message]))}`,
    ).to.be.at.most(5);
    const webErrors = logLines(web!.run.stdout()).filter((line) => line.level >= 50);
    expect(webErrors.length, `web error lines: ${JSON.stringify(webErrors.map((e) => e.msg))}`).to.be.at.most(10);
    console.log(
      `    restart: ${count(acknowledged).total} writes acknowledged (${before.total} before the outage), ${refused.length} refused, slowest ${slowest} ms, ` +
        `down ${upAt - downAt} ms, error lines: worker ${errors.length}, web ${webErrors.length}`,
    );
  });

  const count = (acknowledged: Record<string, string[]>) => {
    const byKind = Object.fromEntries(Object.entries(acknowledged).map(([k, ids]) => [k, ids.length]));
    return { ...byKind, total: Object.values(byKind).reduce((a, b) => a + b, 0) };
  };
});
