import type { Knex } from 'knex';
import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../platform/logger.ts';
import { softReading } from './cached.ts';

/**
 * Credit movements by ledger kind, counted from `credit_ledger_entries`: credits move in PL/pgSQL
 * functions and many code paths, and every movement is one immutable ledger row, so the ledger is the
 * one place that sees them all.
 *
 * Why incremental counters and not an aggregate per scrape: the ledger grows by millions of rows and
 * `GROUP BY kind` over it is a full scan. Instead each process scans it ONCE (its first scrape: the
 * totals so far), then reads only the rows that arrived since, through the unique index on `seq`
 * (an identity column, so new rows have higher seqs). The counters are therefore the ledger's
 * all-time totals in every process (aggregate with max(), not sum()).
 *
 * Why not simply `seq > last seen`: seqs are drawn at insert, commits land in another order. A
 * transaction holding seq 41 may commit after seq 42 was read; a plain watermark would skip 41
 * forever. So every seq missing below the watermark is remembered as pending together with the
 * snapshot's xmax (the first transaction id not yet started when the gap was seen) and looked up
 * again (`seq = ANY(pending)`, the same index) at each scrape. Once the snapshot xmin passes that
 * xmax, every transaction that could have drawn the seq has ended; a seq still missing then was
 * rolled back and is forgotten. (Ledger writers write credit_balances first, so they already hold a
 * transaction id when they draw a seq.) At the first scan only seqs of the last `BASELINE_GAP_WINDOW`
 * rows are tracked: transactions still running at start-up drew recent seqs.
 */
const BASELINE_GAP_WINDOW = 10_000;
/** Bound on remembered gaps (a transaction left open for hours holds them all). */
const MAX_PENDING = 100_000;

const tallySql = `
  WITH fresh AS MATERIALIZED (
    SELECT seq, kind, amount FROM credit_ledger_entries WHERE seq > :since OR seq = ANY(:pending::bigint[])
  ), top AS (
    SELECT greatest(max(seq), :since) AS high FROM fresh
  )
  SELECT
    (SELECT coalesce(json_agg(k), '[]') FROM (SELECT kind, count(*)::bigint AS entries, sum(amount)::bigint AS amount FROM fresh GROUP BY kind) k) AS kinds,
    (SELECT coalesce(array_agg(seq), '{}') FROM fresh WHERE seq <= :since) AS found,
    (SELECT high FROM top) AS high,
    (SELECT coalesce(array_agg(g), '{}') FROM top, generate_series(greatest(:since, top.high - :window) + 1, top.high) g
      WHERE NOT EXISTS (SELECT 1 FROM fresh WHERE fresh.seq = g)) AS gaps,
    pg_snapshot_xmin(pg_current_snapshot())::text AS xmin,
    pg_snapshot_xmax(pg_current_snapshot())::text AS xmax`;

interface TallyRow {
  kinds: { kind: string; entries: number; amount: number }[];
  found: (string | number)[];
  high: number;
  gaps: (string | number)[];
  xmin: string;
  xmax: string;
}

/** The running totals of one process and the seqs it still waits for. */
export class LedgerTally {
  readonly totals = new Map<string, { entries: number; amount: number }>();
  private since: number | undefined;
  /** Missing seq → xmax of the snapshot that first missed it. */
  private readonly pending = new Map<number, bigint>();

  private readonly db: Knex;
  constructor(db: Knex) {
    this.db = db;
  }

  async refresh(): Promise<void> {
    const baseline = this.since === undefined;
    const since = this.since ?? 0;
    const { rows } = await this.db.raw(tallySql, {
      since,
      // An array literal: knex would expand a JS array into a list of parameters.
      pending: `{${[...this.pending.keys()].join(',')}}`,
      window: baseline ? BASELINE_GAP_WINDOW : Number.MAX_SAFE_INTEGER,
    });
    const row = rows[0] as TallyRow;
    for (const { kind, entries, amount } of row.kinds) {
      const total = this.totals.get(kind) ?? { entries: 0, amount: 0 };
      this.totals.set(kind, { entries: total.entries + Number(entries), amount: total.amount + Number(amount) });
    }
    for (const seq of row.found) this.pending.delete(Number(seq));
    const xmin = BigInt(row.xmin);
    for (const [seq, xmax] of this.pending) if (xmin >= xmax) this.pending.delete(seq);
    const xmax = BigInt(row.xmax);
    for (const seq of row.gaps) if (this.pending.size < MAX_PENDING) this.pending.set(Number(seq), xmax);
    this.since = Number(row.high);
  }

  /** Seqs still awaited (tests). */
  get pendingSeqs(): number[] {
    return [...this.pending.keys()];
  }
}

export interface CreditMetricsOptions {
  /** How long one reading serves scrapes. */
  cacheMs?: number;
  log?: Logger;
}

/** `credits_moved_total{kind}` (credits) and `credit_ledger_entries_total{kind}` (rows), from the ledger. */
export function registerCreditMetrics(registry: Registry, db: Knex, options: CreditMetricsOptions = {}): LedgerTally {
  const tally = new LedgerTally(db);
  // A failed reading keeps the totals at their last values (still correct, only late); the next scrape catches up.
  const read = softReading(registry, 'credits', () => tally.refresh(), undefined, options);
  const counter = (name: string, help: string, field: 'entries' | 'amount') =>
    new Counter({
      name,
      help,
      labelNames: ['kind'],
      registers: [registry],
      async collect() {
        await read();
        this.reset();
        for (const [kind, total] of tally.totals) this.inc({ kind }, total[field]);
      },
    });
  counter('credits_moved_total', 'Credits moved by ledger kind (grant, purchase, hold, capture, release, expiry, …), all time', 'amount');
  counter('credit_ledger_entries_total', 'Credit ledger rows by kind, all time', 'entries');
  return tally;
}
