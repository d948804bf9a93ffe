// `npm run ops -- <command>`: the job console from a terminal, a client of the operator API (/ops/*)
// over HTTP. Tables by default, `--json` for the API's own answer. Exit codes: 0 done, 1 the API (or
// the network) refused, 2 a usage error. The commands are in ./cli/commands.ts.
import { parseArgs } from 'node:util';
import { ApiError, opsClient, UsageError } from './cli/api.ts';
import { type Context, type Option, options, type Values } from './cli/command.ts';
import { commands } from './cli/commands.ts';
import { terminalSafe } from './cli/terminal.ts';

export const USAGE = `usage: npm run ops -- <command> [options]

commands:
  jobs list [--state S] [--queue Q] [--organization ORG] [--from T] [--to T]
            [--resource ID] [--request ID] [--origin work|cron|internal|all]
            [--limit N] [--cursor C] [--exact]
            [--stuck]            only jobs running past their kind's expected time on a live worker
  jobs show ID
  jobs retry ID [--reason R]
  jobs retry-now ID [--reason R]  start a job waiting out its retry backoff (or a delayed send) now
  jobs cancel ID [--reason R]
  jobs delete ID [--reason R]     a job that is not running
  bulk retry|cancel|delete --reason R [job filter options of jobs list] [--dry-run]
                                 preview, start a durable bulk action and follow it to its end
  bulk list [--organization ORG] [--cursor C]
  bulk show ID
  bulk abort ID [--reason R]
  redrive QUEUE --reason R [--organization ORG] [--from T] [--to T] [--dry-run]
                                 move QUEUE's dead letters back to QUEUE (a bulk action, followed to its end)
  pause queue QUEUE --reason R [--until T]
  pause organization ORG --queue Q --reason R [--until T]
  pause schedule cron:QUEUE|task:ID --reason R [--until T] [--organization ORG]
                                 (an owner or admin names the task's organization)
  resume PAUSE_ID [--reason R]
  trigger cron:QUEUE|task:ID     run a schedule now (even while paused)
  audit [--organization ORG] [--job ID] [--action A] [--limit N] [--cursor C]
  queues [--hours N] [--dead-letters] [--internal] [--organization ORG]
  organizations [--organization ORG] [--limit N]
                                 each organization's running and waiting jobs against its fairness limit
  workers [--all]
  schedules [--organization ORG] [--cursor C]
  pauses [--all] [--organization ORG] [--cursor C]

options:
  --url URL      the API (default $OPS_URL, else http://localhost:$PORT, PORT defaulting to 3000)
  --token T      an operator's bearer token, or an organization owner's or admin's (then name
                 --organization) (default $OPS_TOKEN); for a local setup:
                 OPS_TOKEN=$(npm run -s token -- --sub you --operator)
  --json         print the API's JSON answer instead of a table
  -h, --help     this text
`;

/** Commands of two words: `jobs list`, `bulk retry`, `pause queue`, … */
const GROUPS = new Set(['jobs', 'bulk', 'pause']);

export interface CliIo {
  fetch: typeof globalThis.fetch;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
  /** How the redrive waits between polls (tests pass a shorter one). */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs one command line (without `node cli.ts`); resolves to the exit code. Everything it prints,
 * tables, JSON, errors and usage alike, goes through ./cli/terminal.ts, which shows control and
 * bidi characters as escapes instead of letting them act on the terminal.
 */
export async function runCli(argv: readonly string[], raw: CliIo): Promise<number> {
  const io: CliIo = { ...raw, stdout: terminalSafe(raw.stdout), stderr: terminalSafe(raw.stderr) };
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
  const name = GROUPS.has(positionals[0]!) ? positionals.slice(0, 2).join(' ') : positionals[0]!;
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

  let api: Context['api'];
  try {
    api = opsClient(io.fetch, base, token);
  } catch (error) {
    return usage(io, (error as Error).message);
  }
  const print = (text: string) => void io.stdout.write(text);
  const context: Context = {
    args,
    values,
    api,
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
