import { expect } from 'chai';
import net from 'node:net';
import type { Db } from '../../src/db/knex.ts';
import { invitationEmailJob } from '../../src/invitations/jobs.ts';
import { useChildProcesses } from '../support/processes.ts';
import { createDb, eventually, expireAttemptsQuickly, isolatedDatabase, jobState, logLines, outboxRows, seedInvitation, spawnWorker } from './support.ts';

/** Real worker processes on their own database: killed mid-job, and stopped gracefully. */
describe('worker processes', function () {
  this.timeout(120_000); // worker processes start slowly on a loaded machine (tsx compiles the app at each start)
  let url: string;
  let db: Db;
  const worker = useChildProcesses((env: Record<string, string> = {}) => spawnWorker(url, env));

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
    await expireAttemptsQuickly(url, invitationEmailJob.name, 2);
  });
  after(async () => {
    await db.destroy();
  });

  it('retries the job of a worker killed after the side effect, and the e-mail is recorded exactly once', async () => {
    const { invitationId, jobId } = await seedInvitation(db, url);
    // The first worker records the e-mail, then stalls before completing the job.
    const first = worker({ EMAIL_SANDBOX_DELAY_MS: '60000' });
    await eventually(async () => (await jobState(db, jobId))?.state === 'active' && (await outboxRows(db, invitationId)).length === 1);
    process.kill(-first.child.pid!, 'SIGKILL');
    expect((await first.exited).signal).to.equal('SIGKILL');
    expect(await jobState(db, jobId)).to.deep.equal({ state: 'active', retry_count: 0 });

    // The retried attempt is not NOTIFYed: the backstop poll finds it.
    worker({ WORKER_POLL_INTERVAL_SECONDS: '1' });
    const done = await eventually(async () => {
      const job = await jobState(db, jobId);
      return job?.state === 'completed' ? job : undefined;
    });
    expect(done.retry_count).to.equal(1);
    const rows = await outboxRows(db, invitationId);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ provider: 'sandbox', subject: 'Inviter invited you to Crash Co' });
  });

  it('finishes the running job on SIGTERM, then exits 0 without logging an error', async () => {
    const { invitationId, jobId } = await seedInvitation(db, url);
    const child = worker({ EMAIL_SANDBOX_DELAY_MS: '1500', LOG_LEVEL: 'info' });
    await eventually(async () => (await outboxRows(db, invitationId)).length === 1);
    expect((await jobState(db, jobId))?.state).to.equal('active');
    child.child.kill('SIGTERM');
    const exit = await child.exited;
    expect({ code: exit.code, signal: exit.signal }).to.deep.equal({ code: 0, signal: null });
    expect(await jobState(db, jobId)).to.deep.equal({ state: 'completed', retry_count: 0 });
    const lines = logLines(exit.stdout);
    expect(lines.map((line) => line.msg)).to.include.members(['worker started', 'shutting down', 'job done']);
    expect(lines.filter((line) => line.level >= 40)).to.deep.equal([]);
  });

  it('an idle worker stopped at once logs no error either', async () => {
    const child = worker({ LOG_LEVEL: 'info' });
    await child.waitForOutput(/worker started/);
    child.child.kill('SIGTERM');
    const exit = await child.exited;
    expect(exit.code).to.equal(0);
    expect(logLines(exit.stdout).filter((line) => line.level >= 40)).to.deep.equal([]);
  });

  it('losing the database: one error line, probes with backoff, then picks up jobs again once it is back', async () => {
    const target = new URL(url);
    const proxy = await databaseProxy(target.hostname, Number(target.port));
    try {
      const proxied = new URL(url);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(proxy.port);
      const child = run(proxied.toString(), { LOG_LEVEL: 'info', WORKER_DB_RETRY_MAX_SECONDS: '2', WORKER_POLL_INTERVAL_SECONDS: '1' });
      await child.waitForOutput(/worker started/);
      const before = child.stdout().length;

      proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 6000));
      const outage = logLines(child.stdout().slice(before));
      // Without backoff: ≈ 23 error lines a second (every queue's poll, every worker slot).
      expect(outage.filter((line) => line.level >= 50).map((line) => line.msg)).to.deep.equal([
        'database unreachable: job pick-up paused, reconnecting with backoff',
      ]);
      const probes = outage.filter((line) => line.msg === 'database still unreachable');
      expect(probes.length).to.be.within(2, 5);
      expect(outage.length).to.be.below(10);

      proxy.restore();
      await child.waitForOutput(/database reachable again/);
      const { invitationId, jobId } = await seedInvitation(db, url);
      await eventually(async () => (await jobState(db, jobId))?.state === 'completed');
      expect(await outboxRows(db, invitationId)).to.have.length(1);
    } finally {
      await proxy.close();
    }
  });

  function run(databaseUrl: string, env: Record<string, string>) {
    const previous = url;
    url = databaseUrl;
    try {
      return worker(env);
    } finally {
      url = previous;
    }
  }
});

/** A TCP proxy in front of Postgres whose connections can be cut (and refused) and then allowed again. */
async function databaseProxy(host: string, port: number) {
  let up = true;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (!up) return void client.destroy();
    const upstream = net.connect(port, host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      up = false;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      up = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
