import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * What every benchmark script shares: `--name=value` flags (read as BENCH_NAME), percentiles,
 * the machine's load (printed with every result: the machine is shared and its speed swings),
 * and process memory read from /proc.
 */

/** argv `--tasks=10000` → BENCH_TASKS=10000 (a flag wins over the environment); `--help` prints the script's own description. */
export function readFlags(): void {
  if (process.argv.slice(2).some((arg) => arg === '--help' || arg === '-h')) printHelp();
  for (const arg of process.argv.slice(2)) {
    const match = /^--([a-z][a-z0-9-]*)(?:=(.*))?$/.exec(arg);
    if (!match) throw new Error(`unknown argument ${arg} (flags are --name=value)`);
    process.env[`BENCH_${match[1]!.replaceAll('-', '_').toUpperCase()}`] = match[2] ?? '1';
  }
}

/** The usage line and the script's leading doc comment (what it measures, its flags and defaults), then exit 0. */
function printHelp(): never {
  const script = process.argv[1]!;
  const source = readFileSync(script, 'utf8');
  // A leading /** … */ block, or leading // lines.
  const block = /^\s*\/\*\*([\s\S]*?)\*\//.exec(source)?.[1] ?? /^(\s*\/\/.*\n)+/.exec(source)?.[0] ?? '';
  const description = block
    .split('\n')
    .map((line) => line.replace(/^\s*(\* ?|\/\/ ?)/, ''))
    .join('\n')
    .trim();
  const name = process.env.npm_lifecycle_event ?? `tsx ${script}`;
  process.stdout.write(`usage: npm run ${name} -- [--flag=value ...]   (each --flag is also the variable BENCH_FLAG)\n\n${description}\n`);
  process.exit(0);
}

/** A non-negative number from BENCH_<name> (or its flag). */
export function num(name: string, fallback: number): number {
  const raw = process.env[`BENCH_${name}`];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`BENCH_${name} (--${name.toLowerCase().replaceAll('_', '-')}) must be a number ≥ 0`);
  return value;
}
export const int = (name: string, fallback: number) => Math.floor(num(name, fallback));
export const text = (name: string, fallback: string) => process.env[`BENCH_${name}`] || fallback;

/** Nearest-rank percentile of an ascending list. */
export const percentile = (sorted: readonly number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]! : Number.NaN;
export const ascending = (values: readonly number[]) => [...values].sort((a, b) => a - b);
export function median(values: readonly number[]): number {
  const sorted = ascending(values);
  const mid = Math.floor(sorted.length / 2);
  if (!sorted.length) return Number.NaN;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The 1-minute load average, as printed next to each result. */
export const load = () => loadavg()[0]!.toFixed(2);
export const loads = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');

/** Resident set size of a process in MiB (Linux /proc), or NaN once it is gone. */
export function rssMiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
    return kb / 1024;
  } catch {
    return Number.NaN;
  }
}

/** Least-squares slope of y over x. */
export function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const num = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return den === 0 ? Number.NaN : num / den;
}

/** Polls `check` every `everyMs` until it returns a value other than undefined, or throws after `timeoutMs` (a bench must not hang). */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${(timeoutMs / 1000).toFixed(0)} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

export const fmt = {
  s: (ms: number) => `${(ms / 1000).toFixed(1)} s`,
  ms: (ms: number) => `${ms.toFixed(1)} ms`,
  rate: (perSecond: number, unit = '/s') => `${perSecond >= 100 ? Math.round(perSecond).toLocaleString('en-US') : perSecond.toFixed(1)}${unit}`,
  x: (ratio: number) => `${ratio.toFixed(2)}×`,
};

const TICKS_PER_SECOND = 100; // Linux USER_HZ

/** utime, stime, cutime, cstime (seconds) and the parent of a process, from /proc; null once it is gone. */
function procStat(pid: number): { ppid: number; self: number; children: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const n = (i: number) => Number(fields[i]) / TICKS_PER_SECOND;
    return { ppid: Number(fields[1]), self: n(11) + n(12), children: n(13) + n(14) };
  } catch {
    return null;
  }
}

/** CPU seconds a process has used so far (user + system). */
export const cpuSeconds = (pid: number) => procStat(pid)?.self ?? Number.NaN;

/**
 * CPU seconds the PostgreSQL server behind `db` has used so far: the postmaster, its live children
 * and the children it has reaped (the server runs on this machine: the embedded one, or a local one).
 */
export async function postgresCpu(db: { raw(sql: string): Promise<{ rows: { pid: number }[] }> }): Promise<() => number> {
  const backend = (await db.raw('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const postmaster = procStat(backend)?.ppid;
  if (!postmaster) return () => Number.NaN;
  return () => {
    const root = procStat(postmaster);
    if (!root) return Number.NaN;
    let total = root.self + root.children;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const child = procStat(Number(entry));
      if (child?.ppid === postmaster) total += child.self;
    }
    return total;
  };
}

type Raw = { raw(sql: string): Promise<{ rows: Record<string, unknown>[] }> };
interface Activity {
  commits: number;
  tables: Map<string, { ins: number; upd: number; del: number }>;
}

/** The database's cumulative counters (transactions, rows fetched, row writes per table), after the statistics of finished transactions are flushed. */
async function activity(db: Raw): Promise<Activity> {
  await sleep(10_500); // an idle backend flushes its statistics within 10 s (PGSTAT_IDLE_INTERVAL)
  await db.raw('SELECT pg_stat_clear_snapshot()');
  const database = (await db.raw('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()')).rows[0]!;
  const { rows } = await db.raw(
    `SELECT schemaname || '.' || relname AS name, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_del AS del FROM pg_stat_all_tables
      WHERE schemaname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')`,
  );
  // pg-boss's job table is partitioned per queue: count its partitions as one.
  const tables = new Map<string, { ins: number; upd: number; del: number }>();
  for (const r of rows) {
    const name = String(r.name).startsWith('pgboss.j') ? 'pgboss.job (all queues)' : String(r.name);
    const t = tables.get(name) ?? { ins: 0, upd: 0, del: 0 };
    t.ins += Number(r.ins);
    t.upd += Number(r.upd);
    t.del += Number(r.del);
    tables.set(name, t);
  }
  return { commits: Number(database.xact_commit), tables };
}

/**
 * Counts what the database does from now on, for `report(units)`: transactions committed and rows
 * inserted/updated/deleted per table (the busiest first), per unit of work (run, job, request).
 * Other sessions on the same database (the bench's own polling) are counted too. Each end waits
 * 10.5 s for the statistics to be flushed: start it before the timed part, not inside it.
 */
export async function countDatabaseWork(db: Raw): Promise<{ report(units: number): Promise<string> }> {
  const before = await activity(db);
  return {
    async report(units) {
      const after = await activity(db);
      const per = (n: number) => (n / units).toFixed(1);
      const writes = [...after.tables]
        .map(([name, t]) => {
          const b = before.tables.get(name) ?? { ins: 0, upd: 0, del: 0 };
          return { name, ins: t.ins - b.ins, upd: t.upd - b.upd, del: t.del - b.del };
        })
        .filter((t) => t.ins + t.upd + t.del > 0)
        .sort((a, b) => b.ins + b.upd + b.del - (a.ins + a.upd + a.del));
      const total = writes.reduce((s, t) => s + t.ins + t.upd + t.del, 0);
      return (
        `${per(after.commits - before.commits)} transactions, ${per(total)} rows written: ` +
        writes
          .slice(0, 12)
          .map((t) => `${t.name} ${[t.ins && `+${per(t.ins)}`, t.upd && `~${per(t.upd)}`, t.del && `-${per(t.del)}`].filter(Boolean).join(' ')}`)
          .join(', ')
      );
    },
  };
}

/** `work` between the two ends of countDatabaseWork (its time then includes 21 s of waiting for statistics). */
export async function databaseWork<T>(db: Raw, units: number, work: () => Promise<T>): Promise<{ value: T; report: string }> {
  const counter = await countDatabaseWork(db);
  const value = await work();
  return { value, report: await counter.report(units) };
}
