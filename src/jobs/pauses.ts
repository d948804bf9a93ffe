import type { Knex } from 'knex';
import type { Job } from 'pg-boss';
import { notify, type NotificationHub } from '../db/notifications.ts';
import type { Logger } from '../platform/logger.ts';
import { type DeferUntil, deferFetchedJob, deferQueuedJobs, restoreDeferredJobs } from './boss-sql/index.ts';

/**
 * Pauses at three scopes — a queue, one organization on a queue, a schedule — with a reason and an
 * optional expiry. pg-boss has no pause, so ours works in two places:
 * - when a pause is written, the queued jobs it covers are pushed back (their `start_after` moved
 *   to the expiry, or a day ahead) in the same transaction, and each is remembered with its own
 *   start time in `job_deferrals`; a resume restores exactly those;
 * - workers hold the open pauses in memory (refreshed on NOTIFY and every few seconds) and check
 *   every job they fetch: one a pause covers — enqueued after the pause, or fetched by a worker
 *   that had not heard of it yet — is put back untouched (no attempt used) and deferred the same
 *   way. A paused schedule's cron job is completed as skipped unless an operator triggered it.
 * The SQL on pauses is in this module; what they do to pg-boss's jobs is in ./boss-sql/deferrals.ts.
 */
export interface Pause {
  id: string;
  scope: 'queue' | 'organization' | 'schedule';
  queue: string | null;
  organization_id: string | null;
  schedule: string | null;
  reason: string;
  expires_at: Date | null;
  created_by: string;
  /** An operator of the service set it, or the organization's owners or admins (only operators lift an operator's). */
  set_by: 'operator' | 'organization';
  created_at: Date;
  resumed_at: Date | null;
  /** Who ended it, or `expiry`. */
  resumed_by: string | null;
  /** Null while open; false for `expiry`. */
  resumed_by_operator: boolean | null;
}

export type PauseScope = Pick<Pause, 'scope' | 'queue' | 'organization_id' | 'schedule'>;

export const PAUSES_CHANNEL = 'job_pauses';

/** An indefinite pause pushes jobs back by this much; a worker re-defers any that come back while it lasts. */
const INDEFINITE_DEFERRAL = '1 day';

/** Until the pause's expiry, or a day ahead for an indefinite one. */
const deferralOf = (pause: Pause): DeferUntil => (pause.expires_at ? { at: pause.expires_at } : { interval: INDEFINITE_DEFERRAL });

const OPEN = `resumed_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;

export async function openPauses(db: Knex | Knex.Transaction): Promise<Pause[]> {
  const { rows } = await db.raw(`SELECT * FROM job_pauses WHERE ${OPEN} ORDER BY created_at`);
  return rows as Pause[];
}

/**
 * SQL: no open pause holds the schedule whose key is the SQL expression `scheduleKeySql` (a domain
 * names its own schedules, e.g. src/scheduled-tasks/schedule-key.ts; the dispatcher skips paused
 * tasks, so their `next_run_at` stays and a resume folds the missed slots into one run).
 */
export const scheduleNotPausedSql = (scheduleKeySql: string) =>
  `NOT EXISTS (SELECT 1 FROM job_pauses p
               WHERE p.schedule = ${scheduleKeySql} AND p.resumed_at IS NULL AND (p.expires_at IS NULL OR p.expires_at > now()))`;

/** The schedule key of a platform cron job (a domain's own schedules are keyed by that domain). */
export const cronSchedule = (queue: string) => `cron:${queue}`;

/**
 * Writes a pause and defers the queued jobs it covers, in the caller's transaction. Returns `null`
 * when the scope is already paused (the open pause is left as it is). An expired pause of the same
 * scope is closed first.
 */
export async function createPause(
  trx: Knex.Transaction,
  scope: PauseScope,
  fields: { reason: string; expires_at: Date | null; created_by: string; set_by: Pause['set_by'] },
): Promise<{ pause: Pause; deferred: number } | null> {
  const same = { scope: scope.scope, queue: scope.queue, organization_id: scope.organization_id, schedule: scope.schedule };
  await trx('job_pauses')
    .where(same)
    .whereNull('resumed_at')
    .where('expires_at', '<=', trx.fn.now())
    .update({ resumed_at: trx.raw('expires_at'), resumed_by: 'expiry', resumed_by_operator: false });
  const { rows } = await trx.raw(
    `INSERT INTO job_pauses (scope, queue, organization_id, schedule, reason, expires_at, created_by, set_by)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT DO NOTHING
     RETURNING *`,
    [scope.scope, scope.queue, scope.organization_id, scope.schedule, fields.reason, fields.expires_at, fields.created_by, fields.set_by],
  );
  const pause = rows[0] as Pause | undefined;
  if (!pause) return null;
  const deferred = pause.queue ? await deferQueuedJobs(trx, { id: pause.id, queue: pause.queue, organizationId: pause.organization_id }, deferralOf(pause)) : 0;
  await notify(trx, PAUSES_CHANNEL, 'changed');
  return { pause, deferred };
}

/** Ends a pause now and restores the start times of the jobs it deferred. `null` when it was not open. */
export async function resumePause(
  trx: Knex.Transaction,
  id: string,
  by: { id: string; operator: boolean },
): Promise<{ pause: Pause; restored: number } | null> {
  const [pause] = (await trx('job_pauses')
    .where({ id })
    .whereNull('resumed_at')
    .update({ resumed_at: trx.fn.now(), resumed_by: by.id, resumed_by_operator: by.operator })
    .returning('*')) as Pause[];
  if (!pause) return null;
  const restored = await restoreDeferredJobs(trx, [id]);
  await notify(trx, PAUSES_CHANNEL, 'changed');
  return { pause, restored };
}

/**
 * Closes pauses whose expiry passed (their jobs were deferred only until then, so they are already
 * runnable) and forgets their deferrals. Run by the console's periodic snapshot.
 */
export async function closeExpiredPauses(db: Knex): Promise<number> {
  return db.transaction(async (trx) => {
    const expired = (await trx('job_pauses')
      .whereNull('resumed_at')
      .where('expires_at', '<=', trx.fn.now())
      .update({ resumed_at: trx.raw('expires_at'), resumed_by: 'expiry', resumed_by_operator: false })
      .returning('id')) as { id: string }[];
    if (expired.length === 0) return 0;
    await restoreDeferredJobs(
      trx,
      expired.map((p) => p.id),
    );
    await notify(trx, PAUSES_CHANNEL, 'changed');
    return expired.length;
  });
}

/**
 * Puts a fetched job back untouched — `started_on` cleared, so pg-boss's next claim does not count
 * an attempt — to start when the pause ends. Fenced to this attempt: if the job moved on (cancelled
 * meanwhile), nothing changes. pg-boss's completion of the attempt afterwards finds the job no
 * longer active and leaves it alone.
 */
export async function deferFetched(db: Knex, job: Pick<Job, 'id' | 'name' | 'retryCount'>, pause: Pause): Promise<boolean> {
  return deferFetchedJob(db, job, pause.id, deferralOf(pause));
}

/**
 * A worker's view of the open pauses: loaded at start, reloaded when a pause changes (NOTIFY) and
 * every `refreshMs` (expiries, a missed notification).
 */
export class PauseGate {
  private pauses: Pause[] = [];
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;

  private readonly db: Knex;
  private readonly log: Logger;
  private readonly refreshMs: number;
  constructor(db: Knex, log: Logger, refreshMs = 5_000) {
    this.db = db;
    this.log = log;
    this.refreshMs = refreshMs;
  }

  async start(hub: NotificationHub): Promise<void> {
    await this.refresh();
    try {
      this.unsubscribe = await hub.subscribe(PAUSES_CHANNEL, 'changed', { changed: () => void this.refresh(), close: () => undefined });
    } catch (error) {
      this.log.warn({ err: error }, 'pauses: no NOTIFY; relying on the periodic refresh');
    }
    this.timer = setInterval(() => void this.refresh(), this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
  }

  async refresh(): Promise<void> {
    try {
      this.pauses = await openPauses(this.db);
    } catch (error) {
      // Keep the last known pauses: a worker that cannot read them cannot run jobs either.
      this.log.debug({ err: error }, 'pauses: refresh failed');
    }
  }

  /** The pause that covers a job of `queue` for `organizationId`, if any (expired ones no longer count). */
  covering(queue: string, organizationId: string | null | undefined): Pause | null {
    const now = Date.now();
    return (
      this.pauses.find(
        (p) =>
          p.queue === queue &&
          (p.expires_at === null || new Date(p.expires_at).getTime() > now) &&
          (p.scope === 'queue' || (p.scope === 'organization' && p.organization_id === organizationId)),
      ) ?? null
    );
  }

  schedulePaused(schedule: string): Pause | null {
    const now = Date.now();
    return this.pauses.find((p) => p.schedule === schedule && (p.expires_at === null || new Date(p.expires_at).getTime() > now)) ?? null;
  }
}
