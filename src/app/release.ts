import { allJobs } from './jobs.ts';
import { createBoss, ensureQueues } from '../jobs/boss.ts';
import { indexJobTable, tuneJobTables } from '../jobs/job-table.ts';
import { createDb } from '../db/knex.ts';
import { migrateLatest } from '../db/migrate.ts';
import type { Logger } from '../platform/logger.ts';

/** The `release` step: schema migrations, then pg-boss's schema, every queue and job-table tuning. Idempotent. */
export async function release(databaseUrl: string, log: Logger): Promise<void> {
  const db = createDb(databaseUrl, { max: 2, applicationName: 'workspace-release' });
  try {
    const applied = await migrateLatest(db);
    log.info({ applied }, applied.length ? 'migrations applied' : 'schema up to date');
  } finally {
    await db.destroy();
  }
  const boss = createBoss(databaseUrl, 'release');
  boss.on('error', (error) => log.error({ err: error }, 'pg-boss'));
  await boss.start();
  try {
    await ensureQueues(boss, allJobs);
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
  const tuning = createDb(databaseUrl, { max: 1, applicationName: 'workspace-release' });
  try {
    log.info({ tables: await tuneJobTables(tuning) }, 'job tables tuned');
    const searchable = [...new Set(allJobs.flatMap((job) => job.searchable))];
    log.info({ indexes: await indexJobTable(tuning, searchable) }, 'job table indexed for the console');
  } finally {
    await tuning.destroy();
  }
}
