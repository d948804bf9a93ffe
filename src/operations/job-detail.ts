import type { Knex } from 'knex';
import type { z } from '../core/zod.ts';
import type { AttemptRecord } from '../jobs/attempts.ts';
import { asJobErrorRecord } from '../jobs/error-record.ts';
import type { OperatorActionRow } from './audit.ts';
import type { JobRow } from './job-rows.ts';
import { iso } from './presenter.ts';
import type { attemptSchema, timelineEventSchema } from './schema.ts';

type Attempt = z.input<typeof attemptSchema>;
type TimelineEvent = z.input<typeof timelineEventSchema>;

/**
 * A job's attempt history, oldest first: every attempt a worker began (shown from its claim's mark
 * on the job from the fetch on, so a killed one is there too, credited to the worker that ran it),
 * `running` until it ends. An attempt running now that no claim marked (a fetch of another shape,
 * whose start its worker writes a fraction of a second later) is added from the job row and the
 * worker whose heartbeat reports holding that very attempt.
 */
export async function attemptHistory(db: Knex | Knex.Transaction, job: JobRow): Promise<Attempt[]> {
  const rows = (await db('job_attempts')
    .where({ job_id: job.id })
    .orderBy([{ column: 'started_at' }, { column: 'id' }])) as AttemptRecord[];
  const history: Attempt[] = rows.map((row) => ({
    attempt: row.attempt,
    worker_id: row.worker_id,
    started_at: iso(row.started_at)!,
    ended_at: iso(row.ended_at),
    duration_ms: row.ended_at ? new Date(row.ended_at).getTime() - new Date(row.started_at).getTime() : null,
    outcome: row.outcome ?? 'running',
    // Rows from before errors were redacted at storage are redacted here.
    error: asJobErrorRecord(row.error),
  }));
  const current = history.some((attempt) => attempt.attempt === job.retry_count && attempt.outcome !== 'deferred');
  if (job.state === 'active' && job.started_on && !current) {
    const holder = (await db('job_workers')
      .whereRaw(`in_flight @> ?::jsonb`, [JSON.stringify([{ job_id: job.id, attempt: job.retry_count }])])
      .whereNull('stopped_at')
      .first('id')) as { id: string } | undefined;
    history.push({
      attempt: job.retry_count,
      worker_id: holder?.id ?? null,
      started_at: iso(job.started_on)!,
      ended_at: null,
      duration_ms: null,
      outcome: 'running',
      error: null,
    });
  }
  return history;
}

/** Created, each attempt, retries, the end and operator actions, in time order. */
export function timelineOf(job: JobRow, history: readonly Attempt[], actions: readonly OperatorActionRow[]): TimelineEvent[] {
  const events: TimelineEvent[] = [{ at: iso(job.created_on)!, event: 'created', detail: `queued on ${job.name}` }];
  for (const attempt of history) {
    events.push({
      at: attempt.started_at,
      event: 'attempt_started',
      detail: `attempt ${attempt.attempt + 1}${attempt.worker_id ? ` on worker ${attempt.worker_id}` : ''}`,
    });
    if (attempt.ended_at)
      events.push({
        at: attempt.ended_at,
        event: 'attempt_ended',
        detail: `${attempt.outcome}${attempt.error ? `: ${attempt.error.message}` : ''} (${attempt.duration_ms} ms)`,
      });
  }
  if (job.state === 'retry')
    events.push({ at: iso(job.start_after)!, event: 'retry_scheduled', detail: `next attempt due (${job.retry_count} of ${job.retry_limit} retries used)` });
  if (job.completed_on && (job.state === 'completed' || job.state === 'failed' || job.state === 'cancelled'))
    events.push({ at: iso(job.completed_on)!, event: job.state, detail: job.state === 'failed' ? 'retries exhausted' : job.state });
  for (const action of actions)
    events.push({
      at: iso(action.at)!,
      event: 'operator_action',
      detail: `${action.action} by ${action.actor_id} (${action.actor_role})${action.reason ? `: ${action.reason}` : ''}`,
    });
  // Stable: ties keep the order above (created before its first attempt, an attempt's start before its end).
  return events
    .map((event, index) => ({ event, index }))
    .sort((a, b) => a.event.at.localeCompare(b.event.at) || a.index - b.index)
    .map(({ event }) => event);
}
