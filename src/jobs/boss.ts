import { PgBoss, type ConstructorOptions, type Queue } from 'pg-boss';
import type { JobDefinition } from './define.ts';

export const BOSS_SCHEMA = 'pgboss';

export type Role = 'web' | 'worker' | 'release';

/**
 * One pg-boss instance per process. The web process only sends (no maintenance, no cron);
 * workers supervise, schedule and listen for NOTIFY so an idle queue wakes them at once;
 * `release` installs or upgrades pg-boss's schema and the queues.
 */
export function createBoss(connectionString: string, role: Role, overrides: Partial<ConstructorOptions> = {}): PgBoss {
  const common: ConstructorOptions = {
    connectionString,
    schema: BOSS_SCHEMA,
    application_name: `workspace-${role}-boss`,
  };
  const byRole: Record<Role, ConstructorOptions> = {
    web: { max: 4, supervise: false, schedule: false, migrate: false },
    worker: { max: 8, supervise: true, schedule: true, migrate: false, useListenNotify: true },
    release: { max: 2, supervise: false, schedule: false, migrate: true },
  };
  return new PgBoss({ ...common, ...byRole[role], ...overrides });
}

function queueOptions(job: JobDefinition): Omit<Queue, 'name'> {
  const { policy } = job;
  return {
    policy: 'standard',
    notify: true,
    retryLimit: policy.retryLimit,
    retryDelay: policy.retryDelaySeconds,
    retryBackoff: policy.retryBackoff,
    ...(policy.retryDelayMaxSeconds !== undefined && { retryDelayMax: policy.retryDelayMaxSeconds }),
    expireInSeconds: policy.expireInSeconds,
    ...(policy.heartbeatSeconds !== null && { heartbeatSeconds: policy.heartbeatSeconds }),
    deleteAfterSeconds: policy.deleteAfterSeconds,
    deadLetter: job.deadLetter,
  };
}

/**
 * Creates every queue and its dead-letter queue, or brings their policy up to date, and records
 * each kind's expected attempt time in `job_kinds` (read by the console and /metrics, whose process
 * may not load the kind). Idempotent.
 */
export async function ensureQueues(boss: PgBoss, jobs: readonly JobDefinition[]): Promise<void> {
  for (const job of jobs) {
    const deadLetter = { policy: 'standard', deleteAfterSeconds: 30 * 24 * 3600, retentionSeconds: 30 * 24 * 3600 } as const;
    if (!(await boss.getQueue(job.deadLetter))) await boss.createQueue(job.deadLetter, deadLetter);
    const options = queueOptions(job);
    if (!(await boss.getQueue(job.name))) await boss.createQueue(job.name, options);
    else {
      const { policy: _policy, ...changeable } = options;
      // `null` clears a heartbeat an earlier release set.
      await boss.updateQueue(job.name, { ...changeable, heartbeatSeconds: job.policy.heartbeatSeconds });
    }
  }
  const kinds = jobs.map((job) => ({ queue: job.name, expected_seconds: job.expectedSeconds }));
  if (kinds.length === 0) return;
  // Through pg-boss's connection: release hands this function only its PgBoss.
  await boss.getDb().executeSql(
    `INSERT INTO job_kinds (queue, expected_seconds)
     SELECT x.queue, x.expected_seconds FROM jsonb_to_recordset($1::jsonb) AS x(queue text, expected_seconds double precision)
     ON CONFLICT (queue) DO UPDATE SET expected_seconds = EXCLUDED.expected_seconds, updated_at = now()
      WHERE job_kinds.expected_seconds IS DISTINCT FROM EXCLUDED.expected_seconds`,
    [JSON.stringify(kinds)],
  );
}

/** pg-boss's command result (typed as `{}` in its declarations) carries the count of jobs the command changed. */
export const affected = (result: object): number => (result as { affected?: number }).affected ?? 0;
