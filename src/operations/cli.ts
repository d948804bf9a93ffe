// `npm run ops -- <command>`: the job console from a terminal, a client of the operator API (/ops/*)
// over HTTP. Tables by default, `--json` for the API's own answer. Exit codes: 0 done, 1 the API (or
// the network) refused, 2 a usage error.
import { parseArgs } from 'node:util';

export const USAGE = `usage: npm run ops -- <command> [options]

commands:
  jobs list [--state S] [--queue Q] [--organization ORG] [--from T] [--to T]
            [--resource ID] [--request ID] [--limit N] [--cursor C] [--exact]
  jobs show ID
  jobs retry ID [--reason R]
  jobs cancel ID [--reason R]
  redrive QUEUE --reason R [--organization ORG] [--from T] [--to T] [--dry-run]
                                 move QUEUE's dead letters back to QUEUE (a bulk action, followed to its end)
  queues [--hours N] [--dead-letters] [--organization ORG]
  workers [--all]
  schedules [--organization ORG] [--cursor C]
  pauses [--all] [--organization ORG] [--cursor C]

options:
  --url URL      the API (default $OPS_URL, else http://localhost:$PORT, PORT defaulting to 3000)
  --token T      an operator's bearer token (default $OPS_TOKEN); for a local setup:
                 OPS_TOKEN=$(npm run -s token -- --sub you --operator)
  --json         print the API's JSON answer instead of a table
  -h, --help     this text
`;

export interface CliIo {
  fetch: typeof globalThis.fetch;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
  /** How the redrive waits between polls (tests pass a shorter one). */
  sleep?: (ms: number) => Promise<void>;
}

const options = {
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
} as const;
type Option = keyof typeof options;
type Values = { [K in Option]?: (typeof options)[K]['type'] extends 'string' ? string : boolean };

class UsageError extends Error {}

/** The API's Error body (src/http/errors.ts), or a network failure dressed as one. */
class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

// Output

/** Left-aligned columns (numbers right-aligned), two spaces apart, a header line on top. */
export function formatTable(headers: string[], rows: unknown[][]): string {
  const text = rows.map((row) => row.map(cell));
  const widths = headers.map((header, i) => Math.max(header.length, ...text.map((row) => row[i]!.length)));
  const numeric = headers.map(
    (_, i) => rows.some((row) => typeof row[i] === 'number') && rows.every((row) => typeof row[i] === 'number' || row[i] === null || row[i] === undefined),
  );
  const line = (values: string[]) =>
    values
      .map((value, i) => (numeric[i] ? value.padStart(widths[i]!) : value.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[line(headers), ...text.map(line)].join('\n')}\n`;
}

function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (typeof value === 'string') return value.replace(/[\r\n\t]+/g, ' ');
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** `2026-11-23 07:05:12Z`: sortable, short, unambiguous. */
const time = (iso: unknown) => (typeof iso === 'string' ? `${iso.slice(0, 19).replace('T', ' ')}Z` : '-');
const age = (seconds: unknown) => {
  if (typeof seconds !== 'number') return '-';
  if (seconds < 120) return `${Math.round(seconds)}s`;
  return seconds < 7200 ? `${Math.round(seconds / 60)}m` : `${Math.round(seconds / 3600)}h`;
};
const facts = (pairs: [string, unknown][]) => {
  const width = Math.max(...pairs.map(([key]) => key.length));
  return `${pairs.map(([key, value]) => `${`${key}:`.padEnd(width + 1)}  ${cell(value)}`).join('\n')}\n`;
};
const indent = (text: string) => `${text.replace(/^/gm, '  ')}\n`;

// The commands

// biome-ignore lint/suspicious/noExplicitAny: the API's answers, read field by field as the contract (./schema.ts) describes them
type Json = any;

interface Command {
  /** Options the command takes besides --url, --token, --json, --help. */
  takes: Option[];
  /** Positional arguments after the command words. */
  args: string[];
  run(ctx: Context): Promise<void>;
}

interface Context {
  args: string[];
  values: Values;
  call(method: string, path: string, request?: { query?: Record<string, unknown>; body?: unknown }): Promise<Json>;
  print(text: string): void;
  /** Prints the API's answer as JSON under --json, else `table()`. */
  show(answer: Json, table: () => string): void;
  sleep(ms: number): Promise<void>;
}

const jobRows = (jobs: Json[]) =>
  formatTable(
    ['ID', 'QUEUE', 'STATE', 'ORGANIZATION', 'ATTEMPTS', 'CREATED', 'REQUEST'],
    jobs.map((job) => [job.id, job.queue, job.state, job.organization_id, `${job.attempts}/${job.retry_limit + 1}`, time(job.created_at), job.request_id]),
  );

const jobAction = (verb: 'retry' | 'cancel'): Command => ({
  takes: ['reason'],
  args: ['ID'],
  async run({ args, values, call, show }) {
    const answer = await call('POST', `/ops/jobs/${encodeURIComponent(args[0]!)}/${verb}`, { body: values.reason ? { reason: values.reason } : {} });
    show(answer, () => `job ${answer.job.id} (${answer.job.queue}): ${answer.job.state}\n`);
  },
});

const commands: Record<string, Command> = {
  'jobs list': {
    takes: ['state', 'queue', 'organization', 'from', 'to', 'resource', 'request', 'limit', 'cursor', 'exact'],
    args: [],
    async run({ values, call, show }) {
      const page = await call('GET', '/ops/jobs', {
        query: {
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
        const footer = `${page.items.length} of ${total} jobs created ${time(page.window.from)} .. ${time(page.window.to)}`;
        // The next page keeps this page's window (a default window would have moved on).
        const next = page.next_cursor ? `\nnext page: --from ${page.window.from} --to ${page.window.to} --cursor ${page.next_cursor}` : '';
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
            ['state', job.state],
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
        const alerts = list.alerts.map((a: Json) => `ALERT ${a.queue}: ${a.message}\n`).join('');
        return alerts ? `${table}\n${alerts}` : table;
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
            s.paused?.reason,
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
            p.reason,
            p.created_by,
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

/** Runs one command line (without `node cli.ts`); resolves to the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true }) as { values: Values; positionals: string[] };
  } catch (error) {
    return usage(io, (error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    if (values.help) {
      io.stdout.write(USAGE);
      return 0;
    }
    return usage(io, 'no command given');
  }
  const name = positionals[0] === 'jobs' ? positionals.slice(0, 2).join(' ') : positionals[0]!;
  const command = commands[name];
  if (!command) return usage(io, `unknown command: ${name}`);
  const args = positionals.slice(name.split(' ').length);
  if (args.length !== command.args.length) return usage(io, `${name} takes ${command.args.length ? command.args.join(' ') : 'no arguments'}`);
  const given = (Object.keys(values) as Option[]).filter((key) => !['url', 'token', 'json', 'help'].includes(key));
  const foreign = given.find((key) => !command.takes.includes(key));
  if (foreign) return usage(io, `${name} takes no --${foreign}`);
  for (const numeric of ['limit', 'hours', 'interval'] as const) {
    if (values[numeric] !== undefined && !/^\d+$/.test(values[numeric]!)) return usage(io, `--${numeric} must be a whole number`);
  }

  const base = values.url ?? io.env.OPS_URL ?? `http://localhost:${io.env.PORT || 3000}`;
  const token = values.token ?? io.env.OPS_TOKEN;
  if (!token) return usage(io, 'no token: pass --token or set OPS_TOKEN (an operator token; see --help)');

  const call: Context['call'] = async (method, path, request = {}) => {
    let url: URL;
    try {
      url = new URL(path, base);
    } catch {
      throw new UsageError(`--url: not a URL: ${base}`);
    }
    for (const [key, value] of Object.entries(request.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await io.fetch(url, { method, headers, ...(request.body !== undefined && { body: JSON.stringify(request.body) }) });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new ApiError(0, 'unreachable', `cannot reach ${url.origin}: ${cause?.code ?? cause?.message ?? (error as Error).message}`);
    }
    const text = await response.text();
    let body: Json;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = undefined;
    }
    if (!response.ok) {
      throw new ApiError(response.status, body?.code ?? `http_${response.status}`, body?.message ?? (text.slice(0, 200) || response.statusText));
    }
    if (body === undefined) throw new ApiError(response.status, 'not_json', `${method} ${url.pathname} answered something other than JSON (is --url the API?)`);
    return body;
  };
  const print = (text: string) => void io.stdout.write(text);
  const context: Context = {
    args,
    values,
    call,
    print,
    show: (answer, table) => print(values.json ? `${JSON.stringify(answer, null, 2)}\n` : table()),
    sleep: io.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
  };
  try {
    await command.run(context);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) return usage(io, error.message);
    if (error instanceof ApiError) {
      io.stderr.write(`error: ${error.code}: ${error.message}${error.status ? ` (HTTP ${error.status})` : ''}\n`);
      return 1;
    }
    io.stderr.write(`error: ${(error as Error).stack ?? String(error)}\n`);
    return 1;
  }
}

function usage(io: CliIo, problem: string): number {
  io.stderr.write(`${problem}\n\n${USAGE}`);
  return 2;
}

if (import.meta.main) {
  runCli(process.argv.slice(2), { fetch: globalThis.fetch, stdout: process.stdout, stderr: process.stderr, env: process.env }).then((code) => {
    process.exitCode = code;
  });
}
