// The CLI's commands: what each takes, what it asks the operator API and how it prints the answer.
import { ApiError, type Call, type Json, UsageError } from './api.ts';
import { age, facts, formatTable, indent, time } from './format.ts';

/** Every option of every command (node:util parseArgs); each command says which it takes. */
export const options = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  state: { type: 'string' },
  queue: { type: 'string' },
  organization: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  resource: { type: 'string' },
  request: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  exact: { type: 'boolean' },
  reason: { type: 'string' },
  hours: { type: 'string' },
  'dead-letters': { type: 'boolean' },
  all: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  interval: { type: 'string' },
  stuck: { type: 'boolean' },
} as const;
export type Option = keyof typeof options;
export type Values = { [K in Option]?: (typeof options)[K]['type'] extends 'string' ? string : boolean };

export interface Command {
  /** Options the command takes besides --url, --token, --json, --help. */
  takes: Option[];
  /** Positional arguments after the command words. */
  args: string[];
  run(ctx: Context): Promise<void>;
}

export interface Context {
  args: string[];
  values: Values;
  call: Call;
  print(text: string): void;
  /** Prints the API's answer as JSON under --json, else `table()`. */
  show(answer: Json, table: () => string): void;
  sleep(ms: number): Promise<void>;
}

/** `active (stuck: 95s, expected 30s)` for a stuck job: the state column carries it (scripts read the columns by position). */
const stateOf = (job: Json) => (job.stuck ? `${job.state} (stuck: ${running(job)})` : job.state);
const running = (job: Json) => `${age(job.running_for_seconds)}, expected ${age(job.expected_seconds)}`;

const jobRows = (jobs: Json[]) =>
  formatTable(
    ['ID', 'QUEUE', 'STATE', 'ORGANIZATION', 'ATTEMPTS', 'CREATED', 'REQUEST'],
    jobs.map((job) => [job.id, job.queue, stateOf(job), job.organization_id, `${job.attempts}/${job.retry_limit + 1}`, time(job.created_at), job.request_id]),
  );

const jobAction = (verb: 'retry' | 'cancel'): Command => ({
  takes: ['reason'],
  args: ['ID'],
  async run({ args, values, call, show }) {
    const answer = await call('POST', `/ops/jobs/${encodeURIComponent(args[0]!)}/${verb}`, { body: values.reason ? { reason: values.reason } : {} });
    show(answer, () => `job ${answer.job.id} (${answer.job.queue}): ${answer.job.state}\n`);
  },
});

/** Every command, by its words (`jobs list`, `queues`, …). */
export const commands: Record<string, Command> = {
  'jobs list': {
    takes: ['state', 'queue', 'organization', 'from', 'to', 'resource', 'request', 'limit', 'cursor', 'exact', 'stuck'],
    args: [],
    async run({ values, call, show }) {
      const page = await call('GET', '/ops/jobs', {
        query: {
          stuck: values.stuck ? 'true' : undefined,
          state: values.state,
          queue: values.queue,
          organization_id: values.organization,
          from: values.from,
          to: values.to,
          resource_id: values.resource,
          request_id: values.request,
          limit: values.limit,
          cursor: values.cursor,
          count: values.exact ? 'exact' : undefined,
        },
      });
      show(page, () => {
        const total = `${page.total.exact ? '' : '~'}${page.total.value}`;
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
    async run({ args, call, show }) {
      const detail = await call('GET', `/ops/jobs/${encodeURIComponent(args[0]!)}`);
      show(detail, () => {
        const { job, history, timeline, actions } = detail;
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
  'jobs retry': jobAction('retry'),
  'jobs cancel': jobAction('cancel'),
  redrive: {
    takes: ['reason', 'organization', 'from', 'to', 'dry-run', 'interval'],
    args: ['QUEUE'],
    async run({ args, values, call, print, show, sleep }) {
      if (!values.reason && !values['dry-run']) throw new UsageError('redrive needs --reason (it is recorded in the audit log)');
      const filter = {
        queue: await deadLetterQueue(call, args[0]!, values.organization),
        organization_id: values.organization,
        from: values.from,
        to: values.to,
      };
      const preview = await call('POST', '/ops/bulk-actions/preview', { body: { action: 'redrive', filter: defined(filter) } });
      if (values['dry-run'] || preview.count === 0) {
        show(
          preview,
          () =>
            `${preview.count} dead letters in ${filter.queue} would be redriven${preview.count > preview.limit ? ` (at most ${preview.limit} at once)` : ''}\n`,
        );
        return;
      }
      if (!values.json) print(`redriving ${Math.min(preview.count, preview.limit)} dead letters of ${filter.queue}\n`);
      let { bulk_action: bulk } = await call('POST', '/ops/bulk-actions', { body: { action: 'redrive', filter: defined(filter), reason: values.reason } });
      const interval = Number(values.interval ?? 1000);
      let shown = '';
      for (;;) {
        const progress = `${bulk.state}: ${bulk.done + bulk.skipped}/${bulk.total} (${bulk.done} redriven, ${bulk.skipped} skipped)\n`;
        if (!values.json && progress !== shown) print(progress);
        shown = progress;
        if (bulk.state !== 'running') break;
        await sleep(interval);
        ({ bulk_action: bulk } = await call('GET', `/ops/bulk-actions/${bulk.id}`));
      }
      if (values.json) print(`${JSON.stringify({ bulk_action: bulk }, null, 2)}\n`);
      else for (const skipped of bulk.skipped_reasons) print(`  skipped ${skipped.count}: ${skipped.reason}\n`);
      if (bulk.state === 'aborted') throw new ApiError(409, 'aborted', `bulk action ${bulk.id} was aborted after ${bulk.done} of ${bulk.total}`);
    },
  },
  queues: {
    takes: ['hours', 'dead-letters', 'organization'],
    args: [],
    async run({ values, call, show }) {
      const list = await call('GET', '/ops/queues', {
        query: { hours: values.hours, dead_letters: values['dead-letters'], organization_id: values.organization },
      });
      show(list, () => {
        const table = formatTable(
          ['QUEUE', 'CREATED', 'RETRY', 'ACTIVE', 'DEFERRED', 'FAILED', 'COMPLETED', 'CANCELLED', 'OLDEST', 'WORKERS', 'PAUSED'],
          list.items.map((q: Json) => [
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
          .filter((q: Json) => q.stuck_attempts > 0)
          .map((q: Json) => `STUCK ${q.name}: ${q.stuck_attempts} (npm run ops -- jobs list --stuck --queue ${q.name})\n`)
          .join('');
        const alerts = list.alerts.map((a: Json) => `ALERT ${a.queue}: ${a.message}\n`).join('');
        return alerts || stuck ? `${table}\n${stuck}${alerts}` : table;
      });
    },
  },
  workers: {
    takes: ['all'],
    args: [],
    async run({ values, call, show }) {
      const list = await call('GET', '/ops/workers', { query: { include_stopped: values.all } });
      show(list, () =>
        formatTable(
          ['ID', 'HOST', 'PID', 'VERSION', 'STATUS', 'QUEUES', 'CONCURRENCY', 'IN FLIGHT', 'STARTED', 'LAST HEARTBEAT'],
          list.items.map((w: Json) => [
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
    async run({ values, call, show }) {
      const page = await call('GET', '/ops/schedules', { query: { organization_id: values.organization, cursor: values.cursor } });
      show(page, () => {
        const table = formatTable(
          ['KEY', 'TITLE', 'CRON', 'TIMEZONE', 'ENABLED', 'LAST RUN', 'NEXT RUN', 'PAUSED'],
          page.items.map((s: Json) => [
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
    async run({ values, call, show }) {
      const page = await call('GET', '/ops/pauses', {
        query: { open: values.all ? false : undefined, organization_id: values.organization, cursor: values.cursor },
      });
      show(page, () => {
        const table = formatTable(
          ['ID', 'SCOPE', 'TARGET', 'REASON', 'BY', 'SINCE', 'EXPIRES', 'OPEN'],
          page.items.map((p: Json) => [
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

const defined = (object: Record<string, unknown>) => Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));

/** The dead-letter queue to redrive: QUEUE itself when it is one, else the one the API names for QUEUE. */
async function deadLetterQueue(call: Context['call'], queue: string, organizationId: string | undefined): Promise<string> {
  const { items } = await call('GET', '/ops/queues', { query: { dead_letters: true, organization_id: organizationId } });
  const named = items.find((q: Json) => q.name === queue);
  if (!named && !items.some((q: Json) => q.dead_letter === queue)) throw new ApiError(404, 'not_found', `no queue ${queue}`);
  return named?.dead_letter ?? queue;
}
