import type { Knex } from 'knex';
import type { z } from '../core/zod.ts';
import { cachedQueueCounts, isInternalQueue, queueCounts, queueNames, type RunningAttempt, stuckAttempts } from '../jobs/boss-sql/index.ts';
import { openPauses } from '../jobs/pauses.ts';
import type { Deps } from '../platform/deps.ts';
import type { ConsoleCaller } from './access.ts';
import { withinTimeout } from './job-rows.ts';
import { iso, presentPause } from './presenter.ts';
import { liveness } from './running.ts';
import type { alertSchema, queueSchema } from './schema.ts';

type Queue = z.input<typeof queueSchema>;
type Alert = z.input<typeof alertSchema>;

const emptyCounts = () => ({ created: 0, retry: 0, active: 0, completed: 0, cancelled: 0, failed: 0, deferred: 0 });

/**
 * Queue health. Waiting and running jobs are counted live (they are few, and indexed: pg-boss's
 * fetch index and the console's active index); finished jobs over the last `hours` (the created_on
 * index); throughput from the per-minute snapshot; alerts from the configured thresholds and from
 * the attempts running past their kind's expected time on a live worker (stuck).
 */
export async function queueHealth(
  deps: Pick<Deps, 'db' | 'config'>,
  caller: Pick<ConsoleCaller, 'organizationId' | 'operator'>,
  options: { hours: number; deadLetters: boolean; internal: boolean },
) {
  const organizationId = caller.organizationId;
  return withinTimeout(deps.db, deps.config.OPS_STATEMENT_TIMEOUT_MS, async (trx) => {
    const names = (await queueNames(trx)).filter(
      (queue) => (options.deadLetters || !queue.name.endsWith('.dead')) && (options.internal || !isInternalQueue(queue.name)),
    );
    // pg-boss's counts are of whole queues: an organization's view has only its own, counted live.
    const cached = organizationId ? new Map() : new Map((await cachedQueueCounts(trx)).map((row) => [row.name, row]));
    const { waiting, active, finished } = await queueCounts(trx, { organizationId, hours: options.hours });
    const throughput = await throughputOf(trx, organizationId, options.hours);
    const workers = await liveWorkersByQueue(trx, deps.config.WORKER_LOST_AFTER_SECONDS);
    const stuck = await stuckAttempts(trx, { organizationId, ...liveness(deps.config) });
    const pauses = (await openPauses(trx)).filter(
      (p) => p.scope !== 'schedule' && (!organizationId || p.scope === 'queue' || p.organization_id === organizationId),
    );

    const items: Queue[] = names.map(({ name, dead_letter }) => {
      const counts = emptyCounts();
      let oldest: number | null = null;
      for (const row of waiting.filter((r) => r.name === name)) {
        counts[row.state] += row.due;
        counts.deferred += row.deferred;
        if (row.oldest !== null) oldest = Math.max(oldest ?? 0, row.oldest);
      }
      counts.active = active.find((r) => r.name === name)?.n ?? 0;
      for (const row of finished.filter((r) => r.name === name)) counts[row.state] = row.n;
      const series = throughput.get(name) ?? [];
      const live = workers.get(name) ?? { live: 0, lastHeartbeatAge: null };
      const stuckHere = stuck.filter((attempt) => attempt.name === name);
      const stats = cached.get(name);
      // pg-boss's own queues are its business (e.g. its cron sender, which no worker of ours serves): never an alert.
      const internal = isInternalQueue(name);
      return {
        name,
        dead_letter,
        internal,
        counts,
        stats: stats
          ? {
              queued: stats.queued,
              deferred: stats.deferred,
              active: stats.active,
              failed: stats.failed,
              total: stats.total,
              counted_at: iso(stats.counted_at),
            }
          : null,
        oldest_ready_seconds: oldest === null ? null : Math.round(oldest * 10) / 10,
        throughput: series,
        live_workers: live.live,
        stuck_attempts: stuckHere.length,
        pauses: pauses.filter((p) => p.queue === name).map((p) => presentPause(p, caller)),
        alerts: name.endsWith('.dead') || internal ? [] : alertsOf(deps, { oldest, series, live, waiting: counts.created + counts.retry, stuck: stuckHere }),
      };
    });
    return { items, alerts: items.flatMap((queue) => queue.alerts.map((alert) => ({ ...alert, queue: queue.name }))) };
  });
}

async function throughputOf(trx: Knex.Transaction, organizationId: string | null, hours: number) {
  const { rows } = await trx.raw(
    `SELECT queue, minute, sum(created)::int AS created, sum(completed)::int AS completed, sum(failed)::int AS failed
       FROM queue_throughput
      WHERE minute >= date_trunc('minute', now()) - make_interval(hours => ?) ${organizationId ? 'AND organization_id = ?' : ''}
      GROUP BY queue, minute ORDER BY minute`,
    [hours, ...(organizationId ? [organizationId] : [])],
  );
  const byQueue = new Map<string, Queue['throughput']>();
  for (const row of rows as { queue: string; minute: Date; created: number; completed: number; failed: number }[]) {
    const series = byQueue.get(row.queue) ?? [];
    series.push({ minute: iso(row.minute)!, created: row.created, completed: row.completed, failed: row.failed });
    byQueue.set(row.queue, series);
  }
  return byQueue;
}

/** Per queue: workers whose heartbeat is fresh, and how old the freshest heartbeat of any worker serving it is. */
async function liveWorkersByQueue(trx: Knex.Transaction, lostAfterSeconds: number) {
  const { rows } = await trx.raw(
    `SELECT queue, count(*) FILTER (WHERE stopped_at IS NULL AND last_heartbeat_at >= now() - make_interval(secs => ?))::int AS live,
            extract(epoch FROM now() - max(last_heartbeat_at))::float AS age
       FROM job_workers, unnest(queues) AS queue
      WHERE last_heartbeat_at >= now() - interval '1 day'
      GROUP BY queue`,
    [lostAfterSeconds],
  );
  return new Map((rows as { queue: string; live: number; age: number }[]).map((row) => [row.queue, { live: row.live, lastHeartbeatAge: row.age }]));
}

function alertsOf(
  deps: Pick<Deps, 'config'>,
  queue: {
    oldest: number | null;
    series: Queue['throughput'];
    live: { live: number; lastHeartbeatAge: number | null };
    waiting: number;
    /** Longest-running first. */
    stuck: readonly RunningAttempt[];
  },
): Alert[] {
  const alerts: Alert[] = [];
  const { OPS_ALERT_BACKLOG_AGE_SECONDS, OPS_ALERT_FAILURE_RATE, OPS_ALERT_NO_WORKER_SECONDS } = deps.config;
  if (queue.oldest !== null && queue.oldest > OPS_ALERT_BACKLOG_AGE_SECONDS)
    alerts.push({
      kind: 'backlog_age',
      message: `the oldest waiting job is ${Math.round(queue.oldest)} s old`,
      value: Math.round(queue.oldest),
      threshold: OPS_ALERT_BACKLOG_AGE_SECONDS,
      job_id: null,
    });
  const recent = queue.series.filter((point) => new Date(point.minute).getTime() >= Date.now() - 15 * 60_000);
  const failed = recent.reduce((sum, point) => sum + point.failed, 0);
  const attempts = failed + recent.reduce((sum, point) => sum + point.completed, 0);
  if (attempts >= 10 && failed / attempts > OPS_ALERT_FAILURE_RATE)
    alerts.push({
      kind: 'failure_rate',
      message: `${failed} of ${attempts} attempts failed in the last 15 minutes`,
      value: Math.round((failed / attempts) * 1000) / 1000,
      threshold: OPS_ALERT_FAILURE_RATE,
      job_id: null,
    });
  const silentFor = queue.live.lastHeartbeatAge ?? Number.POSITIVE_INFINITY;
  if (queue.live.live === 0 && silentFor > OPS_ALERT_NO_WORKER_SECONDS)
    alerts.push({
      kind: 'no_live_worker',
      message: queue.live.lastHeartbeatAge === null ? 'no worker has served this queue in the last day' : `no live worker for ${Math.round(silentFor)} s`,
      value: Number.isFinite(silentFor) ? Math.round(silentFor) : -1,
      threshold: OPS_ALERT_NO_WORKER_SECONDS,
      job_id: null,
    });
  const [longest] = queue.stuck;
  if (longest) {
    const attempts = queue.stuck.length === 1 ? '1 attempt is' : `${queue.stuck.length} attempts are`;
    alerts.push({
      kind: 'stuck_attempts',
      message: `${attempts} running past the expected ${longest.expected_seconds} s on a live worker; the longest, job ${longest.id}, for ${Math.round(longest.running_for_seconds)} s`,
      value: queue.stuck.length,
      threshold: 0,
      job_id: longest.id,
    });
  }
  return alerts;
}

/** The alerts in force now, across every organization (for `/metrics`). */
export async function currentAlerts(deps: Pick<Deps, 'db' | 'config'>) {
  return (await queueHealth(deps, { organizationId: null, operator: true }, { hours: 1, deadLetters: false, internal: false })).alerts;
}
