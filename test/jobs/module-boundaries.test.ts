import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { allJobs } from '../../src/app/jobs.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { release } from '../../src/app/release.ts';
import { startWorker } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { run } from '../support/processes.ts';
import { createDb, isolatedDatabase } from './support.ts';

/** What a process loads, measured: `node --import record-loads.mjs --import tsx -e <script>`. */
async function filesLoadedBy(script: string): Promise<string[]> {
  const child = run(process.execPath, ['--import', './test/jobs/record-loads.mjs', '--import', 'tsx', '--input-type=module', '-e', script], {
    LOG_LEVEL: 'silent',
  });
  const exit = await child.exited;
  expect(exit.code, exit.stderr).to.equal(0);
  const line = exit.stdout.split('\n').find((l) => l.startsWith('LOADED '));
  return JSON.parse(line!.slice('LOADED '.length)) as string[];
}

/** Every .ts file under `dir`, relative to the repository root. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('pg-boss internals: one module', () => {
  it('no file of src/ or workers/ but src/jobs/boss-sql/ names pg-boss’s schema (src/jobs/boss.ts only hands it to pg-boss)', () => {
    // The schema by name in SQL (`pgboss.job`), its constant, or the bare name as a string.
    const namesSchema = /\bpgboss\.|\bBOSS_SCHEMA\b|['"`]pgboss['"`]/;
    const allowed = (file: string) => file.startsWith('src/jobs/boss-sql/') || file === 'src/jobs/boss.ts';
    const offenders = [...sourceFiles('src'), ...sourceFiles('workers')]
      .filter((file) => !allowed(file))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, i) => (namesSchema.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
      );
    expect(offenders, `SQL on pg-boss's tables belongs in src/jobs/boss-sql/ (behind a named function):\n${offenders.join('\n')}`).to.deep.equal([]);
  });
});

describe('job modules: who loads what', function () {
  this.timeout(60_000);

  it('the web process (and everything that enqueues) loads job definitions, never their handlers', async () => {
    const files = await filesLoadedBy(`await import('./src/web.ts'); await import('./src/app/jobs.ts');`);
    expect(files).to.include.members(['src/web.ts', 'src/app/jobs.ts', 'src/assets/jobs.ts', 'src/invitations/jobs.ts']);
    expect(files.filter((file) => file.endsWith('/handlers.ts') || file.startsWith('workers/'))).to.deep.equal([]);
  });

  it('a worker with every handler loaded imports nothing from src/http', async () => {
    const files = await filesLoadedBy(
      `const { allJobs } = await import('./src/app/jobs.ts'); await import('./workers/main.ts'); await Promise.all(allJobs.map((job) => job.handler()));`,
    );
    expect(files).to.include.members(['workers/main.ts', 'src/assets/handlers.ts', 'src/platform/maintenance/handlers.ts']);
    expect(files.filter((file) => file.startsWith('src/http/'))).to.deep.equal([]);
  });

  it('one list: every job has a distinct versioned queue, a loadable handler, and a valid cron when it has one', async () => {
    const names = allJobs.map((job) => job.name);
    expect(new Set(names).size).to.equal(names.length);
    for (const job of allJobs) {
      expect(job.name).to.match(/^[a-z-]+\.[a-z.-]+\.v\d+$/);
      expect(job.name.endsWith(`.v${job.version}`)).to.equal(true);
      expect(await job.handler()).to.be.a('function');
      if (job.cron !== null) expect(job.cron.split(' ')).to.have.length(5);
    }
  });

  it('release creates every queue of the list (heartbeat, dead letter); a worker registers exactly the schedules it names', async () => {
    const url = await isolatedDatabase();
    const db = createDb(url, { max: 1 });
    const config = testConfig();
    const worker = await startWorker(config, url, createLogger(config, 'test-worker'));
    try {
      const schedules = await db('pgboss.schedule').orderBy('name').select('name', 'cron', 'timezone');
      const expected = allJobs.filter((job) => job.cron !== null).map((job) => ({ name: job.name, cron: job.cron, timezone: 'UTC' }));
      expect(schedules).to.deep.equal(expected.sort((a, b) => (a.name < b.name ? -1 : 1)));
      const queues = await db('pgboss.queue')
        .whereIn(
          'name',
          allJobs.map((job) => job.name),
        )
        .orderBy('name')
        .select('name', 'heartbeat_seconds', 'dead_letter');
      expect(queues).to.deep.equal(
        allJobs
          .map((job) => ({ name: job.name, heartbeat_seconds: job.policy.heartbeatSeconds, dead_letter: job.deadLetter }))
          .sort((a, b) => (a.name < b.name ? -1 : 1)),
      );
    } finally {
      await worker.stop();
      await db.destroy();
    }
  });

  it('release brings an existing queue back to its definition (a heartbeat removed by hand comes back)', async () => {
    const url = await isolatedDatabase();
    const db = createDb(url, { max: 1 });
    try {
      const job = allJobs[0]!;
      await db('pgboss.queue').where({ name: job.name }).update({ heartbeat_seconds: null, retry_limit: 0 });
      await release(url, createLogger({ LOG_LEVEL: 'silent' }, 'test-release'));
      expect(await db('pgboss.queue').where({ name: job.name }).first('heartbeat_seconds', 'retry_limit')).to.deep.equal({
        heartbeat_seconds: job.policy.heartbeatSeconds,
        retry_limit: job.policy.retryLimit,
      });
    } finally {
      await db.destroy();
    }
  });
});
