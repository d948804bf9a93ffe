import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../src/db/embedded.ts';
import { TEST_JWT_SECRET } from '../support/config.ts';
import { type ChildRun, run, stopLeftoverPostgres, useChildProcesses } from '../support/processes.ts';

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

  before(async () => {
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
      },
      { detached: true },
    );
    [banner] = (await started.waitForOutput(/Workspace Platform is serving [\s\S]*?A token: .*\n/)) as RegExpMatchArray as [string];
  });
  after(async () => {
    if (started && started.child.exitCode === null && started.child.signalCode === null) process.kill(-started.child.pid!, 'SIGINT');
    await started?.exited;
    await stopLeftoverPostgres(dir);
    await rm(dir, { recursive: true, force: true });
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
});

/** A second `npm start` (or `npm run web`) on a port in use: found before anything starts. */
describe('npm start on a busy port', function () {
  this.timeout(120_000);
  let dir: string;
  let busy: Server;
  let port: number;
  const start = useChildProcesses((script: 'start' | 'web') =>
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
