import { allJobs } from './jobs.ts';
import { createBoss, ensureQueues } from '../jobs/boss.ts';
import { indexJobTable, installClaimMarks, tuneJobTables } from '../jobs/job-table.ts';
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
  // After pg-boss's migrations (which may rebuild its tables): the claim's mark the history reads, and its index below.
  const marks = createDb(databaseUrl, { max: 1, applicationName: 'workspace-release' });
  try {
    await installClaimMarks(marks);
  } finally {
    await marks.destroy();
  }
  await tuneAndIndexJobTable(databaseUrl, log, 'workspace-release');
}

/**
 * Job-table tuning and the console's indexes (built without holding writes), on one connection
 * holding an advisory lock, so two releases at once (a deploy racing `npm start`) build each index
 * once: the second skips. Returns whether this process did the work.
 */
export async function tuneAndIndexJobTable(databaseUrl: string, log: Logger, applicationName: string): Promise<boolean> {
  const db = createDb(databaseUrl, { max: 1, applicationName });
  try {
    const { rows } = await db.raw(`SELECT pg_try_advisory_lock(hashtext('workspace.job-table-indexes')) AS locked`);
    if (!rows[0].locked) return false;
    log.info({ tables: await tuneJobTables(db) }, 'job tables tuned');
    const searchable = [...new Set(allJobs.flatMap((job) => job.searchable))];
    log.info({ indexes: await indexJobTable(db, searchable) }, 'job table indexed for the console');
    return true;
  } finally {
    // Closing the one connection releases the session's advisory lock.
    await db.destroy();
  }
}
