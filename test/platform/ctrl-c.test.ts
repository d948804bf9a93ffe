import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/db/embedded.ts';
import { TEST_JWT_SECRET } from '../support/config.ts';
import { nodeWithTsx, run, stopLeftoverPostgres, useChildProcesses, type ChildRun, type Exit } from '../support/processes.ts';
import { newUser, request } from '../support/server.ts';

/**
 * Ctrl-C on `npm start` as a terminal sends it: SIGINT to the whole process group (the parent, its
 * web and worker children, and npm when there is one). Everything stops in order, the embedded
 * PostgreSQL last, and the next start finds the data written before.
 */
describe('Ctrl-C on npm start', function () {
  // Two starts of an embedded PostgreSQL (the first with initdb and migrations) on a shared machine.
  this.timeout(240_000);
  let dir: string;
  let env: Record<string, string | undefined>;
  const start = useChildProcesses((command: 'node' | 'npm') =>
    command === 'node' ? run(...nodeWithTsx('src/main.ts'), env, { detached: true }) : run('npm', ['start', '--silent'], env, { detached: true }),
  );

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'workspace-ctrl-c-'));
    await chmod(dir, 0o755);
    // DATABASE_URL unset: the embedded PostgreSQL under DATA_DIR, as on a fresh machine.
    env = {
      DATABASE_URL: undefined,
      DATA_DIR: dir,
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      NODE_ENV: 'development',
      JWT_SECRET: TEST_JWT_SECRET,
      LOG_LEVEL: 'info',
    };
  });
  after(async () => {
    // A failed test leaves the database running in a session of its own: stop it before removing its files.
    await stopLeftoverPostgres(dir);
    await rm(dir, { recursive: true, force: true });
  });

  it('exits 0 with no warning or error, stops the database last, and the data is there on the next start (also under npm)', async () => {
    const alice = newUser();
    const first = start('node');
    const url = await servingUrl(first);
    const created = await request(url, 'post', '/organizations', { token: alice.token, body: { name: 'Kept Co' } });
    expect(created.status).to.equal(201);
    const invited = await request(url, 'post', `/organizations/${created.body.organization.id}/invitations`, {
      token: alice.token,
      body: { email: 'bob@example.test', role: 'member' },
    });
    expect(invited.status).to.equal(201);

    process.kill(-first.child.pid!, 'SIGINT');
    expectCleanStop(await first.exited);
    expect(existsSync(path.join(dir, 'pg', 'postmaster.pid')), 'PostgreSQL was stopped, not orphaned').to.equal(false);

    // Under npm, which relays the terminal's SIGINT to its script: one Ctrl-C still is one.
    const second = start('npm');
    const again = await servingUrl(second);
    const organization = await request(again, 'get', `/organizations/${created.body.organization.id}`, { token: alice.token });
    expect(organization.status, JSON.stringify(organization.body)).to.equal(200);
    expect(organization.body.organization.name).to.equal('Kept Co');
    const invitations = await request(again, 'get', `/organizations/${created.body.organization.id}/invitations`, { token: alice.token });
    expect(invitations.status, JSON.stringify(invitations.body)).to.equal(200);
    expect(invitations.body.items.map((invitation: { email: string }) => invitation.email)).to.deep.equal(['bob@example.test']);

    process.kill(-second.child.pid!, 'SIGINT');
    expectCleanStop(await second.exited);
    expect(existsSync(path.join(dir, 'pg', 'postmaster.pid'))).to.equal(false);
  });
});

async function servingUrl(started: ChildRun): Promise<string> {
  const [, url] = (await started.waitForOutput(/Workspace Platform is serving (http:\/\/\S+)/)) as RegExpMatchArray;
  return url!;
}

function expectCleanStop(exit: Exit): void {
  expect({ code: exit.code, signal: exit.signal }, exit.stderr).to.deep.equal({ code: 0, signal: null });
  const lines = exit.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; name: string; msg: string });
  expect(lines.filter((line) => line.level >= 40)).to.deep.equal([]);
  // Each of the three processes logged its stop.
  expect(lines.filter((line) => line.msg === 'shutting down').map((line) => line.name)).to.have.members(['start', 'web', 'worker']);
  expect(exit.stderr).to.not.match(/Error|\n\s+at /);
}
