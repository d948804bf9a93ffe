import { randomUUID } from 'node:crypto';
import { createDb, type Db } from '../../src/db/knex.ts';
import { invitationEmailJob } from '../../src/invitations/jobs.ts';
import type { UpdateQueueOptions } from 'pg-boss';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { TEST_JWT_SECRET } from '../support/config.ts';
import { testDatabase } from '../support/hooks.ts';
import { nodeWithTsx, run, type ChildRun } from '../support/processes.ts';

/** A database of its own (migrated, queues created), so queue tweaks and workers do not touch other tests. */
export async function isolatedDatabase(): Promise<string> {
  return testDatabase().createMigratedDatabase('jobs_test');
}

/** Changes a queue's policy for a test (retries, expiry, heartbeat), as a release would. */
export async function tuneQueue(url: string, queue: string, options: UpdateQueueOptions): Promise<void> {
  const boss = createBoss(url, 'release');
  await boss.start();
  try {
    await boss.updateQueue(queue, options);
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}

/** A killed worker's attempt is retried once it expires: make that `expireInSeconds`, with no retry delay. */
export const expireAttemptsQuickly = (url: string, queue: string, expireInSeconds: number) =>
  tuneQueue(url, queue, { expireInSeconds, retryDelay: 0, retryBackoff: false });

/**
 * A killed worker's attempt is retried once its heartbeat is 10 s stale (pg-boss's minimum), with
 * no retry delay — seconds instead of the queue's production timings.
 */
export const retryDeadAttemptsQuickly = (url: string, queue: string, heartbeatSeconds = 10) =>
  tuneQueue(url, queue, { heartbeatSeconds, retryDelay: 0, retryBackoff: false });

/** An organization with a pending invitation whose e-mail job was enqueued in the same transaction. */
export async function seedInvitation(db: Db, url: string): Promise<{ invitationId: string; jobId: string }> {
  const boss = createBoss(url, 'web');
  await boss.start();
  try {
    return await db.transaction(async (trx) => {
      const userId = `user_${randomUUID().slice(0, 8)}`;
      await trx('users').insert({ id: userId, email: `${userId}@example.test`, name: 'Inviter' });
      const [org] = await trx('organizations')
        .insert({ name: 'Crash Co', slug: `crash-${randomUUID().slice(0, 8)}`, created_by_id: userId })
        .returning('id');
      const [invitation] = await trx('invitations')
        .insert({
          organization_id: org.id,
          email: `guest-${randomUUID().slice(0, 8)}@example.test`,
          role: 'member',
          invited_by_id: userId,
          expires_at: trx.raw(`now() + interval '7 days'`),
        })
        .returning('id');
      const jobId = await new JobQueue(boss).enqueue(trx, invitationEmailJob, { invitation_id: invitation.id }, { organizationId: org.id });
      return { invitationId: invitation.id as string, jobId };
    });
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}

/** A real `worker` process (node --import tsx workers/main.ts), in a process group of its own. */
export function spawnWorker(databaseUrl: string, env: Record<string, string> = {}): ChildRun {
  return run(
    ...nodeWithTsx('workers/main.ts'),
    { NODE_ENV: 'test', DATABASE_URL: databaseUrl, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'silent', WORKER_SUPERVISE_INTERVAL_SECONDS: '1', ...env },
    { detached: true },
  );
}

export async function jobState(db: Db, jobId: string): Promise<{ state: string; retry_count: number } | undefined> {
  return db('pgboss.job').where({ id: jobId }).first('state', 'retry_count');
}

/** The pino lines a process printed (run it with LOG_LEVEL set), parsed. */
export const logLines = (stdout: string): { level: number; msg: string; [key: string]: unknown }[] =>
  stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));

export const outboxRows = (db: Db, invitationId: string) => db('email_outbox').where({ idempotency_key: `invitation:${invitationId}` });

export { createDb };
/** Moved to test/support/eventually.ts (it now names the condition that never held). */
export { eventually } from '../support/eventually.ts';
