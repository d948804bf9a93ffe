import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../src/db/embedded.ts';
import { TEST_JWT_SECRET } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { type ChildRun, run, stopLeftoverPostgres, useChildProcesses } from '../support/processes.ts';
import { newUser, request } from '../support/server.ts';
import { type FakeUpstream, startUpstream } from '../support/upstream.ts';

interface LogLine {
  name: string;
  pid: number;
  level: number;
  msg: string;
  process?: string;
  signal?: string;
  child_pid?: number;
}

/** The JSON log lines printed so far (stdout is a pipe here, so one JSON object a line). */
const logLines = (started: ChildRun): LogLine[] =>
  started
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);

/** The pids of `name` processes that logged `msg`, in order. */
const pidsLogging = (started: ChildRun, name: string, msg: RegExp) =>
  logLines(started)
    .filter((line) => line.name === name && msg.test(line.msg))
    .map((line) => line.pid);

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * `npm start` as a newcomer runs it, in a process group of its own on a fresh data directory: what
 * it prints, and where its embedded database listens.
 */
describe('npm start', function () {
  // initdb, migrations and three processes on a shared machine.
  this.timeout(240_000);
  let dir: string;
  let pgPort: number;
  let started: ChildRun;
  let banner: string;
  let upstream: FakeUpstream;
  let url: string;

  before(async () => {
    upstream = await startUpstream({
      '/fox.txt': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('The red fox hunts voles under the snow.');
      },
    });
    dir = await mkdtemp(path.join(tmpdir(), 'workspace-npm-start-'));
    await chmod(dir, 0o755);
    pgPort = await freePort();
    started = run(
      'npm',
      ['start', '--silent'],
      {
        DATABASE_URL: undefined,
        DATA_DIR: dir,
        EMBEDDED_PG_PORT: String(pgPort),
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        NODE_ENV: 'development',
        JWT_SECRET: TEST_JWT_SECRET,
        LOG_LEVEL: 'info',
        OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`,
        WORKER_POLL_INTERVAL_SECONDS: '0.5',
      },
      { detached: true },
    );
    const [matched, served] = (await started.waitForOutput(/Workspace Platform is serving (\S+)[\s\S]*?A token: .*\n/)) as RegExpMatchArray as [string, string];
    banner = matched;
    url = served;
  });
  after(async () => {
    if (started && started.child.exitCode === null && started.child.signalCode === null) process.kill(-started.child.pid!, 'SIGINT');
    await started?.exited;
    await stopLeftoverPostgres(dir);
    await rm(dir, { recursive: true, force: true });
    await upstream?.close();
  });

  it('runs its embedded PostgreSQL on EMBEDDED_PG_PORT and prints no password', async () => {
    const credentials = JSON.parse(readFileSync(path.join(dir, 'pg-credentials.json'), 'utf8')) as { user: string; password: string; port: number };
    expect(credentials.port).to.equal(pgPort);
    expect(banner).to.include(
      `Database (embedded PostgreSQL): postgres://workspace:***@127.0.0.1:${pgPort}/workspace (password in ${path.join(dir, 'pg-credentials.json')})`,
    );
    expect(started.stdout()).to.not.include(credentials.password);
    expect(started.stderr()).to.not.include(credentials.password);
    const client = new pg.Client({ host: '127.0.0.1', port: pgPort, user: credentials.user, password: credentials.password, database: 'workspace' });
    await client.connect();
    try {
      const { rows } = await client.query<{ migrated: string }>('SELECT count(*) AS migrated FROM knex_migrations');
      expect(Number(rows[0]!.migrated)).to.be.greaterThan(0);
    } finally {
      await client.end();
    }
  });

  it('restarts a worker killed after it was ready, while the web keeps serving; the new worker finishes queued work', async () => {
    const alice = newUser();
    const org = (await request(url, 'post', '/organizations', { token: alice.token, body: { name: 'Restart Co' } })).body.organization.id as string;
    const [worker] = await eventually('the worker started', async () => {
      const pids = pidsLogging(started, 'worker', /^worker started$/);
      return pids.length > 0 && pids;
    });
    process.kill(worker!, 'SIGKILL');
    await eventually('the killed worker is gone', async () => !isAlive(worker!));

    // While it is down (or already back) the web answers, and work queued meanwhile waits for the next worker.
    expect((await request(url, 'get', '/healthz')).status).to.equal(200);
    const imported = await request(url, 'post', '/assets/imports/link', { token: alice.token, body: { organization_id: org, url: `${upstream.url}/fox.txt` } });
    expect(imported.status, JSON.stringify(imported.body)).to.equal(201);
    expect(imported.body.upload_file_state).to.equal('in_progress');

    const asset = await eventually('the import finished on the restarted worker', async () => {
      const res = await request(url, 'get', `/assets/${imported.body.id}`, { token: alice.token });
      return res.body.upload_file_state !== 'in_progress' && res.body;
    });
    expect(asset.upload_file_state).to.equal('success');
    // The new worker logs its start once its cron schedules are in, which may be after it took the import.
    const workers = await eventually('the new worker logged its start', async () => {
      const pids = pidsLogging(started, 'worker', /^worker started$/);
      return pids.length === 2 && pids;
    });
    expect(workers[1]).to.not.equal(worker);
    expect(started.child.exitCode, 'npm start is still running').to.equal(null);
    const crash = logLines(started).find((line) => line.msg === 'worker process exited; restarting it')!;
    expect(crash).to.include({ name: 'start', process: 'worker', signal: 'SIGKILL', child_pid: worker });
    await eventually('the restart is logged', async () => pidsLogging(started, 'start', /^worker process restarted$/).length === 1);
  });

  it('restarts a web process killed after it was ready, without printing the banner again', async () => {
    const [web] = pidsLogging(started, 'web', /^web listening on /);
    process.kill(web!, 'SIGKILL');
    await eventually('the killed web process is gone', async () => !isAlive(web!));
    await eventually('a new web process answers /healthz', async () =>
      request(url, 'get', '/healthz').then(
        (res) => res.status === 200,
        () => false,
      ),
    );
    expect(pidsLogging(started, 'web', /^web listening on /)).to.have.length(2);
    expect(started.stdout().match(/Workspace Platform is serving/g)).to.have.length(1);
    expect(started.child.exitCode).to.equal(null);
  });
});

/** A second `npm start` (or `npm run web`) on a port in use: found before anything starts. */
describe('npm start on a busy port', function () {
  // One case initialises and migrates a database before its web process fails.
  this.timeout(180_000);
  let dir: string;
  let busy: Server;
  let port: number;
  const start = useChildProcesses((script: 'start' | 'web', env: Record<string, string> = {}) =>
    run(
      'npm',
      script === 'start' ? ['start', '--silent'] : ['run', 'web', '--silent'],
      {
        DATABASE_URL: undefined,
        DATA_DIR: dir,
        PORT: String(port),
        HOST: '127.0.0.1',
        NODE_ENV: 'development',
        JWT_SECRET: TEST_JWT_SECRET,
        LOG_LEVEL: 'info',
        ...env,
      },
      { detached: true },
    ),
  );
  before(async () => {
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    port = (busy.address() as { port: number }).port;
  });
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'workspace-busy-port-'));
  });
  afterEach(async () => {
    await stopLeftoverPostgres(dir);
    await rm(dir, { recursive: true, force: true });
  });
  after(async () => new Promise<void>((resolve) => busy.close(() => resolve())));

  it('npm start stops with the reason when a child fails before it is ready (a busy METRICS_PORT), after migrating', async () => {
    const started = start('start', { PORT: String(await freePort()), METRICS_PORT: String(port) });
    const exit = await started.exited;
    expect({ code: exit.code, signal: exit.signal }).to.deep.equal({ code: 1, signal: null });
    expect(exit.stderr).to.equal(`METRICS_PORT ${port} is in use (127.0.0.1:${port}): stop what listens there or set another METRICS_PORT\n`);
    const failed = exit.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine)
      .filter((line) => line.level >= 50);
    expect(failed.map((line) => [line.name, line.msg])).to.deep.equal([['start', 'web process exited before it was ready; stopping']]);
    expect(exit.stdout).to.not.include('Workspace Platform is serving');
    expect(existsSync(path.join(dir, 'pg', 'postmaster.pid')), 'the database was stopped too').to.equal(false);
  });

  for (const script of ['start', 'web'] as const) {
    it(`npm ${script === 'start' ? 'start' : 'run web'} exits 1 with one line naming the port; no database initialised, nothing migrated`, async () => {
      const exit = await start(script).exited;
      expect({ code: exit.code, signal: exit.signal }).to.deep.equal({ code: 1, signal: null });
      expect(exit.stderr).to.equal(`PORT ${port} is in use (127.0.0.1:${port}): stop what listens there or set another PORT\n`);
      expect(exit.stdout).to.equal('');
      // No cluster, no credentials, no secret: the data directory is as it was.
      expect(existsSync(path.join(dir, 'pg'))).to.equal(false);
      expect(readdirSync(dir)).to.deep.equal([]);
    });
  }
});
