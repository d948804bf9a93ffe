/**
 * Autocommitted holds and captures of this process, in batches (src/db/batches.ts; the SQL in
 * migrations/20261128020000_credit_batches.ts): while a hold of an organization is in flight, the
 * holds callers ask of the same organization meanwhile go together in the next statement (captures
 * likewise). Each is still decided alone, exactly as `credit_reserve` / `credit_capture` decide it;
 * on a hot organization the balance row is then locked and handed over once per batch rather than
 * once per hold. A caller's transaction never batches: its hold commits with its own work.
 */
import type { Knex } from 'knex';
import { StatementBatches } from '../db/batches.ts';
import { queryPrepared } from '../db/prepared.ts';
import type { CaptureAnswer, ReserveAnswer } from './hold-model.ts';

/** A capture's item: [hold id, or null and the hold's organization id, run id, reason, member; amount, key, tool call id, description, metadata, final]. */
export type CaptureItem = readonly [
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  number,
  string | null,
  string | null,
  string | null,
  unknown,
  boolean,
];

interface Batches {
  reserve: StatementBatches<readonly Knex.Value[], ReserveAnswer>;
  capture: StatementBatches<CaptureItem, CaptureAnswer>;
}

/** A hold alone: `credit_reserve` itself (its one row), prepared. */
async function reserveOne(db: Knex, args: readonly Knex.Value[]): Promise<ReserveAnswer> {
  const text = 'SELECT * FROM credit_reserve($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)';
  return (await queryPrepared<ReserveAnswer>(db, 'credit_reserve', text, [...args]))[0]!;
}

/** A capture alone: `credit_capture` itself (its one row), prepared; the hold by id, else by its run. */
async function captureOne(db: Knex, [id, organizationId, runId, reason, userId, ...capture]: CaptureItem): Promise<CaptureAnswer> {
  const [amount, key, toolCallId, description, metadata, final] = capture;
  const text = 'SELECT * FROM credit_capture(coalesce($1::uuid, credit_hold_of_run($2, $3, $4, $5)), $6, $7, $8, $9, $10::jsonb, $11)';
  const values = [id, organizationId, runId, reason, userId, amount, key, toolCallId, description, JSON.stringify(metadata), final];
  return (await queryPrepared<CaptureAnswer>(db, 'credit_capture', text, values))[0]!;
}

/** Rows of a batch function (`idx`: the item's 1-based position), back in item order. */
async function many<Row>(db: Knex, name: string, items: readonly unknown[]): Promise<Row[]> {
  const rows = await queryPrepared<Row & { idx: number }>(db, name, `SELECT * FROM ${name}($1::jsonb)`, [JSON.stringify(items)]);
  const answers: Row[] = new Array(items.length);
  for (const row of rows) answers[row.idx - 1] = row;
  return answers;
}

const batchesOf = new WeakMap<Knex, Batches>();

function batchesFor(db: Knex): Batches {
  const known = batchesOf.get(db);
  if (known) return known;
  const batches: Batches = {
    reserve: new StatementBatches({
      one: (args) => reserveOne(db, args),
      many: (items) => many<ReserveAnswer>(db, 'credit_reserve_batch', items),
    }),
    capture: new StatementBatches({
      one: (item) => captureOne(db, item),
      many: (items) => many<CaptureAnswer>(db, 'credit_capture_batch', items),
    }),
  };
  batchesOf.set(db, batches);
  return batches;
}

/** `credit_reserve` (its thirteen arguments), autocommitted, batched with the same organization's. */
export const reserveBatched = (db: Knex, args: readonly Knex.Value[]): Promise<ReserveAnswer> => batchesFor(db).reserve.run(String(args[0]), args);

/** `credit_capture`, autocommitted, batched with the same organization's (captures named by hold id alone go together). */
export const captureBatched = (db: Knex, item: CaptureItem): Promise<CaptureAnswer> => batchesFor(db).capture.run(item[1] ?? '', item);
