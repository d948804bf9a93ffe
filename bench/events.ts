// `npm run bench:events`: commit → delivered on an organization's event stream (SSE), one event at a
// time on an idle system, beside the floor measured in the same run: a bare NOTIFY sent in a
// committing transaction and received on a LISTEN connection. The ratio is what ordering by
// (xid, seq) below the snapshot's xmin, the access predicate and SSE framing cost on top of
// NOTIFY itself. Flags: --events=200 (per measurement), --streams=1 (followers of the measured stream, at most 5: the per-caller limit).
import type { Knex } from 'knex';
import { recordEvent } from '../src/core/events.ts';
import { createDb } from '../src/db/knex.ts';
import { startTestServer } from '../test/support/server.ts';
import { createOrganization, newUser } from '../test/support/factories.ts';
import { follow } from '../test/support/sse.ts';
import { ascending, fmt, int, load, percentile, readFlags } from './support/bench.ts';
import { benchDatabase } from './support/database.ts';

readFlags();
const EVENTS = int('EVENTS', 200);
const STREAMS = Math.max(1, int('STREAMS', 1));

const now = () => performance.now();

/** The floor: a transaction that inserts a row and NOTIFYs, measured to the LISTEN side's receipt. */
async function notifyFloor(db: Knex, count: number): Promise<number[]> {
  await db.raw('CREATE TABLE IF NOT EXISTS bench_outbox (id bigserial PRIMARY KEY, at double precision)');
  const client = (await db.client.acquireRawConnection()) as {
    query(sql: string): Promise<unknown>;
    on(event: 'notification', listener: (message: { payload?: string }) => void): void;
  };
  let arrived: (() => void) | undefined;
  client.on('notification', () => arrived?.());
  await client.query('LISTEN bench_floor');
  const latencies: number[] = [];
  for (let i = 0; i < count; i++) {
    const received = new Promise<void>((resolve) => (arrived = resolve));
    const started = now();
    await db.transaction(async (trx) => {
      await trx('bench_outbox').insert({ at: started });
      await trx.raw(`SELECT pg_notify('bench_floor', '{}')`);
    });
    await received;
    latencies.push(now() - started);
  }
  await db.client.destroyRawConnection(client);
  return ascending(latencies);
}

async function main() {
  const database = await benchDatabase();
  const db = createDb(database.url, { max: 4 });
  const server = await startTestServer({ LOG_LEVEL: 'warn' }, { databaseUrl: database.url });
  try {
    const owner = newUser();
    const org = await createOrganization(server, owner, 'Bench Co');
    const streams = await Promise.all(Array.from({ length: STREAMS }, () => follow(server.url, `/organizations/${org}/events/stream`, owner.token)));
    if (streams.some((s) => s.res.status !== 200)) throw new Error(`a stream was refused: ${streams.map((s) => s.res.status)}`);
    const measured = streams[0]!;

    const floor = await notifyFloor(db, EVENTS);
    const latencies: number[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const before = measured.events.length;
      const started = now();
      await db.transaction((trx) => recordEvent(trx, { organizationId: org, type: 'credits.low_balance', subject: null, object: { n: i } }));
      while (measured.events.length === before) await new Promise((resolve) => setImmediate(resolve));
      latencies.push(now() - started);
    }
    const stream = ascending(latencies);
    for (const s of streams) s.hangUp();

    const line = (name: string, values: number[]) =>
      `${name.padEnd(44)} p50 ${fmt.ms(percentile(values, 50)).padStart(9)}  p95 ${fmt.ms(percentile(values, 95)).padStart(9)}  max ${fmt.ms(values.at(-1)!).padStart(9)}`;
    console.log(`bench:events — ${EVENTS} events one at a time, ${STREAMS} stream(s) following, load ${load()}`);
    console.log(line('baseline: commit → NOTIFY received', floor));
    console.log(line('commit → event on the SSE stream', stream));
    console.log(
      `ratio (stream / baseline): p50 ${fmt.x(percentile(stream, 50) / percentile(floor, 50))}, p95 ${fmt.x(percentile(stream, 95) / percentile(floor, 95))}`,
    );
  } finally {
    await server.stop();
    await db.destroy();
    await database.dispose();
  }
}

await main();
