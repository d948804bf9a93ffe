import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { signToken } from '../../src/auth/sign.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { freePort } from '../../src/db/embedded.ts';
import { TEST_JWT_SECRET } from '../../test/support/config.ts';
import { type ChildRun, nodeWithTsx, run, waitUntilHealthy } from '../../test/support/processes.ts';
import { waitFor } from './bench.ts';

/**
 * The service as deployed, for benchmarks: real `web` and `worker` processes (plain `node <file>`
 * on Node's own type stripping with MALLOC_ARENA_MAX=2, as the npm scripts run them; BENCH_TSX=1
 * runs them as before, `node --import tsx` with glibc's default arenas) on one database, production
 * settings, the sandbox providers, files under a temporary DATA_DIR. Every process started here is
 * stopped by `stop()`.
 */
export async function benchStack(databaseUrl: string, env: Record<string, string> = {}, options: { nodeArgs?: string[] } = {}) {
  const tsx = process.env.BENCH_TSX === '1';
  // The bench's own node flags (a memory probe, a heap-snapshot signal) go after tsx.
  const node = (file: string): [string, string[]] => {
    const [command, args] = nodeWithTsx(file);
    return [command, [...(tsx ? args.slice(0, -1) : []), ...(options.nodeArgs ?? []), file]];
  };
  const dataDir = await mkdtemp(path.join(tmpdir(), 'workspace-bench-'));
  const common = {
    DATABASE_URL: databaseUrl,
    JWT_SECRET: TEST_JWT_SECRET,
    DATA_DIR: dataDir,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '100000000',
    RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '100000000',
    STARTER_CREDITS: '0',
    ...(!tsx && { MALLOC_ARENA_MAX: '2' }),
    ...env,
  };
  const children: ChildRun[] = [];
  const stopped = async (list: readonly ChildRun[]) => {
    for (const child of list) if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGTERM');
    await Promise.all(list.map((child) => child.exited));
  };
  return {
    env: common,
    dataDir,
    /** A web process on a free loopback port, healthy. */
    async web(extra: Record<string, string> = {}): Promise<{ url: string; process: ChildRun }> {
      const port = await freePort();
      const child = run(...node('src/web.ts'), { ...common, PORT: String(port), HOST: '127.0.0.1', ...extra });
      children.push(child);
      const url = `http://127.0.0.1:${port}`;
      await waitUntilHealthy(url, child);
      return { url, process: child };
    },
    /** `count` worker processes, registered (job_workers) and working. */
    async workers(db: Knex, count: number, extra: Record<string, string> = {}): Promise<ChildRun[]> {
      const { rows } = await db.raw(`SELECT count(*)::int AS n FROM job_workers WHERE stopped_at IS NULL AND lost_at IS NULL`);
      const before = rows[0].n as number;
      const list = Array.from({ length: count }, () => run(...node('workers/main.ts'), { ...common, ...extra }));
      children.push(...list);
      await waitFor(
        'the workers to start',
        async () => {
          for (const w of list) if (w.child.exitCode !== null) throw new Error(`a worker exited: ${w.stderr().slice(-2000)}`);
          const { rows: now } = await db.raw(`SELECT count(*)::int AS n FROM job_workers WHERE stopped_at IS NULL AND lost_at IS NULL`);
          return now[0].n >= before + count ? true : undefined;
        },
        180_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 1000)); // subscriptions follow registration
      return list;
    },
    /** Raw pg-boss worker processes (./raw-worker.ts) on `queue`, working. */
    async rawWorkers(queue: string, count: number, extra: Record<string, string> = {}): Promise<ChildRun[]> {
      const list = Array.from({ length: count }, () => run(...nodeWithTsx('bench/support/raw-worker.ts'), { ...common, RAW_QUEUE: queue, ...extra }));
      children.push(...list);
      await Promise.all(list.map((w) => w.waitForOutput(/ready/)));
      return list;
    },
    /** SIGTERM, then waits for them to exit. */
    stop: stopped,
    async dispose(): Promise<void> {
      await stopped(children);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A user owning `organizations` organizations, each granted `credits`; returns a bearer token for the user. */
export async function seedOrganizations(db: Knex, ids: readonly string[], credits = 1_000_000_000, user = 'bench-user'): Promise<string> {
  await db.raw(`INSERT INTO users (id, email, name) VALUES (?, ?, 'Bench') ON CONFLICT DO NOTHING`, [user, `${user}@bench.test`]);
  for (const id of ids) {
    await db.raw(`INSERT INTO organizations (id, name, slug, created_by_id) VALUES (?, ?, ?, ?)`, [id, id, id, user]);
    await db.raw(`INSERT INTO organization_members (organization_id, user_id, role) VALUES (?, ?, 'owner')`, [id, user]);
    await db.transaction((trx) => grantCredits(trx, { organizationId: id, source: 'purchase', amount: credits, description: 'Bench credits' }));
  }
  return signToken(TEST_JWT_SECRET, { sub: user, email: `${user}@bench.test`, name: 'Bench', ttlSeconds: 24 * 3600 });
}
