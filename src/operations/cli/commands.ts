// The CLI's commands: what each takes, what it asks the operator API (through the typed client:
// ./api.ts) and how it prints the answer.
import { ApiError, answer, type OpsClient, UsageError } from './api.ts';
import { age, facts, formatTable, indent, time } from './format.ts';
import { bulkCommands, runBulk } from './bulk-commands.ts';
import { type Command, defined, FILTER_OPTIONS, filterOf, flag, type Json, numberOf, reasonOf } from './command.ts';

const stateOf = (job: Json) => (job.stuck ? `${job.state} (stuck: ${running(job)})` : job.state);
const running = (job: Json) => `${age(job.running_for_seconds)}, expected ${age(job.expected_seconds)}`;

const jobRows = (jobs: Json[]) =>
  formatTable(
    ['ID', 'QUEUE', 'STATE', 'ORGANIZATION', 'ATTEMPTS', 'CREATED', 'REQUEST'],
    jobs.map((job) => [job.id, job.queue, stateOf(job), job.organization_id, `${job.attempts}/${job.retry_limit + 1}`, time(job.created_at), job.request_id]),
  );

const jobCommand = (verb: 'retry' | 'cancel' | 'retry-now'): Command => ({
  takes: ['reason'],
  args: ['ID'],
  async run({ args, values, api, show }) {
    const params = { path: { job_id: args[0]! } };
    const done = await answer(
      verb === 'retry'
        ? api.POST('/ops/jobs/{job_id}/retry', { params, body: reasonOf(values) })
        : verb === 'cancel'
          ? api.POST('/ops/jobs/{job_id}/cancel', { params, body: reasonOf(values) })
          : api.POST('/ops/jobs/{job_id}/retry-now', { params, body: reasonOf(values) }),
    );
    show(done, () => `job ${done.job.id} (${done.job.queue}): ${done.job.state}${verb === 'retry-now' ? `, due ${time(done.job.start_after)}` : ''}\n`);
  },
});

const pauseCommand = (scope: 'queue' | 'organization' | 'schedule'): Command => ({
  // A scheduled task's owners and admins name their organization to pause its schedule (the schedule decides whose it is).
  takes: scope === 'organization' ? ['queue', 'reason', 'until'] : scope === 'schedule' ? ['reason', 'until', 'organization'] : ['reason', 'until'],
  args: [scope === 'queue' ? 'QUEUE' : scope === 'organization' ? 'ORG' : 'SCHEDULE'],
  async run({ args, values, api, show }) {
    if (!values.reason) throw new UsageError('pause needs --reason (it is recorded in the audit log)');
    if (scope === 'organization' && !values.queue) throw new UsageError('pause organization needs --queue (an organization is paused on one queue)');
    const target =
      scope === 'queue'
        ? { queue: args[0] }
        : scope === 'organization'
          ? { organization_id: args[0], queue: values.queue }
          : { schedule: args[0], organization_id: values.organization };
    const created = await answer(
      api.POST('/ops/pauses', { body: { scope, reason: values.reason, ...target, ...(values.until && { expires_at: values.until }) } }),
    );
    show(
      created,
      () =>
        `paused ${scope} ${args[0]}${scope === 'organization' ? ` on ${values.queue}` : ''}: pause ${created.pause.id}; ${created.deferred} queued jobs deferred\n`,
    );
  },
});

/** Every command, by its words (`jobs list`, `queues`, …). */
export const commands: Record<string, Command> = {
  'jobs list': {
    takes: [...FILTER_OPTIONS, 'limit', 'cursor', 'exact', 'stuck'],
    args: [],
    async run({ values, api, show }) {
      const page = await answer(
        api.GET('/ops/jobs', {
          params: {
            query: {
              ...(filterOf(values) as Record<string, never>),
              stuck: flag(values.stuck),
              limit: numberOf(values.limit),
              cursor: values.cursor,
              count: values.exact ? 'exact' : undefined,
            },
          },
        }),
      );
      show(page, () => {
        const total = page.total.exact ? `${page.total.value}` : `~${page.total.value} (estimated, at least ${page.total.at_least})`;
        const footer = `${page.items.length} of ${total} ${values.stuck ? 'stuck ' : ''}jobs created ${time(page.window.from)} .. ${time(page.window.to)}`;
        // The next page keeps this page's window (a default window would have moved on).
        const next = page.next_cursor
          ? `\nnext page:${values.stuck ? ' --stuck' : ''} --from ${page.window.from} --to ${page.window.to} --cursor ${page.next_cursor}`
          : '';
        return `${jobRows(page.items)}\n${footer}${next}\n`;
      });
    },
  },
  'jobs show': {
    takes: [],
    args: ['ID'],
    async run({ args, api, show }) {
      const detail = await answer(api.GET('/ops/jobs/{job_id}', { params: { path: { job_id: args[0]! } } }));
      show(detail, () => {
        const { job, history, timeline, actions } = detail as Json;
        const parts = [
          facts([
            ['id', job.id],
            ['queue', job.queue],
            ['state', stateOf(job)],
            ['running', job.running_for_seconds === null ? null : running(job)],
            ['organization', job.organization_id],
            ['request', job.request_id],
            ['attempts', `${job.attempts} (retry limit ${job.retry_limit})`],
            ['priority', job.priority],
            ['created', time(job.created_at)],
            ['start after', time(job.start_after)],
            ['started', time(job.started_at)],
            ['completed', time(job.completed_at)],
            ['dead letter', job.dead_letter],
            ['source', job.source && `${job.source.queue} ${job.source.job_id}`],
          ]),
          `\npayload${job.redacted.length ? ` (redacted: ${job.redacted.join(', ')})` : ''}:\n${indent(JSON.stringify(job.payload, null, 2))}`,
          `\n${job.state === 'failed' ? 'error' : 'output'}:\n${indent(JSON.stringify(job.output, null, 2))}`,
          `\nattempts:\n${indent(
            formatTable(
              ['#', 'WORKER', 'STARTED', 'ENDED', 'MS', 'OUTCOME', 'ERROR'],
              history.map((a: Json) => [a.attempt, a.worker_id, time(a.started_at), time(a.ended_at), a.duration_ms, a.outcome, a.error?.message]),
            ).trimEnd(),
          )}`,
          `\ntimeline:\n${indent(
            formatTable(
              ['AT', 'EVENT', 'DETAIL'],
              timeline.map((e: Json) => [time(e.at), e.event, e.detail]),
            ).trimEnd(),
          )}`,
        ];
        if (actions.length) {
          parts.push(
            `\noperator actions:\n${indent(
              formatTable(
                ['AT', 'WHO', 'ROLE', 'ACTION', 'REASON'],
                actions.map((a: Json) => [time(a.at), a.actor_id, a.actor_role, a.action, a.reason]),
              ).trimEnd(),
            )}`,
          );
        }
        return parts.join('');
      });
    },
  },
  'jobs retry': jobCommand('retry'),
  'jobs retry-now': jobCommand('retry-now'),
  'jobs cancel': jobCommand('cancel'),
  'jobs delete': {
    takes: ['reason'],
    args: ['ID'],
    async run({ args, values, api, print, values: { json } }) {
      await answer(api.DELETE('/ops/jobs/{job_id}', { params: { path: { job_id: args[0]! }, query: reasonOf(values) } }));
      print(json ? `${JSON.stringify({ deleted: args[0] })}\n` : `job ${args[0]} deleted\n`);
    },
  },
  redrive: {
    takes: ['reason', 'organization', 'from', 'to', 'dry-run', 'interval'],
    args: ['QUEUE'],
    async run(ctx) {
      const { args, values, api } = ctx;
      if (!values.reason && !values['dry-run']) throw new UsageError('redrive needs --reason (it is recorded in the audit log)');
      const queue = await deadLetterQueue(api, args[0]!, values.organization);
      await runBulk(ctx, 'redrive', defined({ queue, organization_id: values.organization, from: values.from, to: values.to }), `dead letters of ${queue}`);
    },
  },
  ...bulkCommands,
  'pause queue': pauseCommand('queue'),
  'pause organization': pauseCommand('organization'),
  'pause schedule': pauseCommand('schedule'),
  resume: {
    takes: ['reason'],
    args: ['PAUSE_ID'],
    async run({ args, values, api, show }) {
      const resumed = await answer(api.POST('/ops/pauses/{pause_id}/resume', { params: { path: { pause_id: args[0]! } }, body: reasonOf(values) }));
      show(resumed, () => `resumed pause ${resumed.pause.id}: ${resumed.restored} deferred jobs due again\n`);
    },
  },
  trigger: {
    takes: [],
    args: ['SCHEDULE'],
    async run({ args, api, show }) {
      const triggered = await answer(api.POST('/ops/schedules/{schedule_key}/trigger', { params: { path: { schedule_key: args[0]! } } }));
      show(
        triggered,
        () => `triggered ${triggered.schedule}${triggered.job_id ? `: job ${triggered.job_id}` : ''}${triggered.run_id ? `, run ${triggered.run_id}` : ''}\n`,
      );
    },
  },
  audit: {
    takes: ['organization', 'job', 'action', 'limit', 'cursor'],
    args: [],
    async run({ values, api, show }) {
      const page = await answer(
        api.GET('/ops/audit-log', {
          params: {
            query: { organization_id: values.organization, job_id: values.job, action: values.action, limit: numberOf(values.limit), cursor: values.cursor },
          },
        }),
      );
      show(page, () => {
        const table = formatTable(
          ['AT', 'WHO', 'ROLE', 'ORGANIZATION', 'ACTION', 'COUNT', 'REASON', 'TARGET'],
          page.items.map((a) => [
            time(a.at),
            a.actor_id,
            a.actor_role,
            a.organization_id,
            a.action,
            a.count,
            a.reason,
            a.job_ids.length === 1 ? a.job_ids[0] : a.bulk_action_id,
          ]),
        );
        return page.next_cursor ? `${table}\nnext page: --cursor ${page.next_cursor}\n` : table;
      });
    },
  },
  organizations: {
    takes: ['organization', 'limit'],
    args: [],
    async run({ values, api, show }) {
      const load = await answer(api.GET('/ops/organizations', { params: { query: { organization_id: values.organization, limit: numberOf(values.limit) } } }));
      show(load, () => {
        const rule =
          load.fairness.mode === 'weighted'
            ? 'organizations share each queue by weight, by what each has in flight (no cap)'
            : `organizations share each queue by weight, each running at most ${load.fairness.fixed_limit} jobs at once per queue (JOB_ORGANIZATION_CONCURRENCY)`;
        const table = formatTable(
          ['ORGANIZATION', 'NAME', 'QUEUE', 'ACTIVE', 'QUEUED', 'LIMIT', 'FLEET SLOTS', 'CAPPED'],
          load.items.flatMap((o) =>
            o.queues.map((q) => [o.organization_id, o.name, q.queue, q.active, q.queued, q.limit, q.fleet_slots, q.capped ? 'yes' : '']),
          ),
        );
        return `${table}\n${rule}\n`;
      });
    },
  },
  queues: {
    takes: ['hours', 'dead-letters', 'organization', 'internal'],
    args: [],
    async run({ values, api, show }) {
      const list = await answer(
        api.GET('/ops/queues', {
          params: {
            query: {
              hours: numberOf(values.hours),
              dead_letters: flag(values['dead-letters']),
              internal: flag(values.internal),
              organization_id: values.organization,
            },
          },
        }),
      );
      show(list, () => {
        const table = formatTable(
          ['QUEUE', 'CREATED', 'RETRY', 'ACTIVE', 'DEFERRED', 'FAILED', 'COMPLETED', 'CANCELLED', 'OLDEST', 'WORKERS', 'PAUSED'],
          list.items.map((q) => [
            q.name,
            q.counts.created,
            q.counts.retry,
            q.counts.active,
            q.counts.deferred,
            q.counts.failed,
            q.counts.completed,
            q.counts.cancelled,
            age(q.oldest_ready_seconds),
            q.live_workers,
            q.pauses.length ? 'yes' : '',
          ]),
        );
        // Below the table, like the alerts: the table's columns are read by position.
        const stuck = list.items
          .filter((q) => q.stuck_attempts > 0)
          .map((q) => `STUCK ${q.name}: ${q.stuck_attempts} (npm run ops -- jobs list --stuck --queue ${q.name})\n`)
          .join('');
        const alerts = list.alerts.map((a) => `ALERT ${a.queue}: ${a.message}\n`).join('');
        return alerts || stuck ? `${table}\n${stuck}${alerts}` : table;
      });
    },
  },
  workers: {
    takes: ['all'],
    args: [],
    async run({ values, api, show }) {
      const list = await answer(api.GET('/ops/workers', { params: { query: { include_stopped: flag(values.all) } } }));
      show(list, () =>
        formatTable(
          ['ID', 'HOST', 'PID', 'VERSION', 'STATUS', 'QUEUES', 'CONCURRENCY', 'IN FLIGHT', 'STARTED', 'LAST HEARTBEAT'],
          list.items.map((w) => [
            w.id,
            w.host,
            w.pid,
            w.version,
            w.status,
            w.queues.length,
            w.concurrency,
            w.jobs_in_flight,
            time(w.started_at),
            time(w.last_heartbeat_at),
          ]),
        ),
      );
    },
  },
  schedules: {
    takes: ['organization', 'cursor'],
    args: [],
    async run({ values, api, show }) {
      const page = await answer(api.GET('/ops/schedules', { params: { query: { organization_id: values.organization, cursor: values.cursor } } }));
      show(page, () => {
        const table = formatTable(
          ['KEY', 'TITLE', 'CRON', 'TIMEZONE', 'ENABLED', 'LAST RUN', 'NEXT RUN', 'PAUSED'],
          page.items.map((s) => [
            s.key,
            s.title,
            s.cron,
            s.timezone,
            s.enabled ? 'yes' : 'no',
            time(s.last_run_at),
            time(s.next_run_at),
            // A tenant sees an operator's pause without its reason: say it is paused, and by whom.
            s.paused ? (s.paused.reason ?? `paused by ${s.paused.set_by}`) : 'no',
          ]),
        );
        return page.next_cursor ? `${table}\nnext page: --cursor ${page.next_cursor}\n` : table;
      });
    },
  },
  pauses: {
    takes: ['all', 'organization', 'cursor'],
    args: [],
    async run({ values, api, show }) {
      const page = await answer(
        api.GET('/ops/pauses', { params: { query: { open: values.all ? false : undefined, organization_id: values.organization, cursor: values.cursor } } }),
      );
      show(page, () => {
        const table = formatTable(
          ['ID', 'SCOPE', 'TARGET', 'REASON', 'BY', 'SINCE', 'EXPIRES', 'OPEN'],
          page.items.map((p) => [
            p.id,
            p.scope,
            [p.queue, p.organization_id, p.schedule].filter(Boolean).join(' / '),
            p.reason ?? (p.set_by === 'operator' ? '(an operator’s)' : null),
            p.created_by ?? p.set_by,
            time(p.created_at),
            time(p.expires_at),
            p.open ? 'yes' : 'no',
          ]),
        );
        return page.next_cursor ? `${table}\nnext page: --cursor ${page.next_cursor}\n` : table;
      });
    },
  },
};

/** The dead-letter queue to redrive: QUEUE itself when it is one, else the one the API names for QUEUE. */
async function deadLetterQueue(api: OpsClient, queue: string, organizationId: string | undefined): Promise<string> {
  const { items } = await answer(api.GET('/ops/queues', { params: { query: { dead_letters: true, organization_id: organizationId } } }));
  const named = items.find((q) => q.name === queue);
  if (!named && !items.some((q) => q.dead_letter === queue)) throw new ApiError(404, 'not_found', `no queue ${queue}`);
  return named?.dead_letter ?? queue;
}
