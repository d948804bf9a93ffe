import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { nodeWithTsx, run } from '../support/processes.ts';

async function query(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('embedded PostgreSQL', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'workspace-embedded-'));
    await chmod(dir, 0o755);
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('recovers from a postgres orphaned by a SIGKILLed process, keeping its data', async function () {
    this.timeout(120_000);
    const [node, args] = nodeWithTsx('test/support/embedded-child.ts');
    const child = run(node, [...args, dir], { LOG_LEVEL: 'silent' });
    child.child.unref();
    const [, url] = (await child.waitForOutput(/URL=(\S+)\n/)) as RegExpMatchArray & [string, string];
    await query(url!, `CREATE TABLE survivors (name text); INSERT INTO survivors VALUES ('kept across the crash')`);

    child.child.kill('SIGKILL');
    expect((await child.exited).signal).to.equal('SIGKILL');
    const pidFile = path.join(dir, 'pg', 'postmaster.pid');
    const orphan = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    expect(isAlive(orphan), 'postgres outlives its SIGKILLed parent').to.equal(true);

    const log = createLogger({ LOG_LEVEL: 'silent' }, 'test');
    const embedded = await startEmbeddedPostgres({ dir, log });
    try {
      expect(isAlive(orphan), 'the orphan was stopped').to.equal(false);
      const { rows } = await query(embedded.url, 'SELECT name FROM survivors');
      expect(rows).to.deep.equal([{ name: 'kept across the crash' }]);
      const restarted = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      expect(restarted).to.not.equal(orphan);
    } finally {
      await embedded.stop();
    }
    expect(existsSync(pidFile)).to.equal(false);
  });
});
