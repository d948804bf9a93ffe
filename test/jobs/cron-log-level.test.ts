import { expect } from 'chai';
import { Writable } from 'node:stream';
import { invitationEmailJob } from '../../src/invitations/jobs.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { sweepRateLimitWindowsJob } from '../../src/platform/maintenance/jobs.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { isolatedDatabase, seedInvitation } from './support.ts';

interface Line {
  level: number;
  msg: string;
  queue?: string;
  job_id?: string;
}

/**
 * An idle service logs quietly at info: a cron job's routine end ("job done") is debug, a job
 * someone asked for (an invitation e-mail) stays info.
 */
describe('job log levels: cron work at debug', function () {
  this.timeout(60_000);
  const lines: Line[] = [];
  let url: string;
  let db: Db;
  let worker: WorkerProcess;
  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as Line);
        done();
      },
    });
    const config = testConfig({ LOG_LEVEL: 'debug', WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    worker = await startWorker(config, url, createLogger(config, 'worker', sink));
  });
  after(async () => {
    await worker?.stop();
    await db?.destroy();
  });

  it('"job done" of a cron job is debug (level 20); of a job asked for, info (30)', async () => {
    const boss = createBoss(url, 'web');
    await boss.start();
    const sweep = await boss.send(sweepRateLimitWindowsJob.name, {});
    await boss.stop({ graceful: false, close: true });
    const { jobId: email } = await seedInvitation(db, url);
    const done = await eventually('both jobs logged their end', async () => {
      const ends = lines.filter((line) => line.msg === 'job done' && (line.job_id === sweep || line.job_id === email));
      return ends.length === 2 && ends;
    });
    expect(done.find((line) => line.job_id === sweep)).to.include({ level: 20, queue: sweepRateLimitWindowsJob.name });
    expect(done.find((line) => line.job_id === email)).to.include({ level: 30, queue: invitationEmailJob.name });
  });
});
