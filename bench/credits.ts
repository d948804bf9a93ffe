/**
 * Hold + capture throughput of the credits ledger: all on one organization (every transaction
 * takes the same balance row lock: the hot row) and spread over 100 organizations.
 * Each operation is two transactions, as a real caller does them: placeHold, then captureHold.
 * Run: npm run bench:credits   (embedded PostgreSQL, throw-away database; ~30 s)
 */
import { createDb } from '../src/db/knex.ts';
import { captureHold, placeHold } from '../src/credits/holds.ts';
import { createCreditPeriods } from '../src/credit-periods.ts';
import { grantCredits } from '../src/credits/ledger.ts';
import { reconcileCredits } from '../src/credits/reconcile.ts';
import { createTestDatabase } from '../test/support/database.ts';

const creditPeriods = createCreditPeriods();

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);

const database = await createTestDatabase();
const db = createDb(database.url, { max: CONCURRENCY + 2 });

async function seed(count: number, prefix: string): Promise<string[]> {
  await db.raw(`INSERT INTO users (id, email, name) VALUES ('bench-user', 'b@bench.test', 'Bench') ON CONFLICT DO NOTHING`);
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  await db('organizations').insert(ids.map((id) => ({ id, name: id, slug: id, created_by_id: 'bench-user' })));
  for (const id of ids) {
    await db.transaction((trx) => grantCredits(trx, { organizationId: id, source: 'purchase', amount: 1_000_000_000, description: 'Bench credits' }));
  }
  return ids;
}

async function run(label: string, organizations: string[]): Promise<void> {
  const latencies: number[] = [];
  const deadline = Date.now() + SECONDS * 1000;
  let next = 0;
  let errors = 0;
  const loop = async () => {
    while (Date.now() < deadline) {
      const org = organizations[next++ % organizations.length]!;
      const started = performance.now();
      try {
        const hold = await db.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: 'bench-user', amount: 10, reason: 'bench' }));
        await db.transaction((trx) => captureHold(trx, hold.id, 7));
        latencies.push(performance.now() - started);
      } catch (error) {
        errors++;
        if (errors < 3) console.error(error);
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  const elapsed = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!.toFixed(1);
  console.log(
    `${label.padEnd(34)} ${latencies.length} hold+capture in ${elapsed.toFixed(1)} s = ${(latencies.length / elapsed).toFixed(0)} ops/s ` +
      `(p50 ${pct(50)} ms, p95 ${pct(95)} ms, p99 ${pct(99)} ms, ${CONCURRENCY} concurrent, errors ${errors})`,
  );
}

try {
  const [hot] = await seed(1, 'hot');
  const spread = await seed(100, 'spread');
  await run('one organization (hot row)', [hot!]);
  await run('100 organizations', spread);
  const discrepancies = await reconcileCredits(db);
  console.log(`reconciliation after the run: ${discrepancies.length === 0 ? 'ledger and balances agree exactly' : JSON.stringify(discrepancies.slice(0, 3))}`);
} finally {
  await db.destroy();
  await database.dispose();
}
