import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from 'knex';

/**
 * No transaction waits for a second pool connection: code running inside an open transaction that
 * takes another connection from the same pool (a statement on the root knex instead of the `trx`,
 * a second `db.transaction`, pg-boss on the shared pool) holds one connection while it waits for
 * another, and as many such requests at once as the pool has connections wait on each other until
 * knex's acquire timeout. The guard marks the async context of every transaction's callback and
 * checks each acquisition from the pool against it.
 *
 * Modes: `throw` (the test suite: the acquisition fails with `SecondConnectionError`, before it
 * waits), `warn` (production default: one log line per call site, and the statement goes on),
 * `off` (nothing marked, nothing checked).
 */
export type TransactionGuardMode = 'off' | 'warn' | 'throw';

export class SecondConnectionError extends Error {
  override name = 'SecondConnectionError';
}

interface OpenTransaction {
  pool: object;
  trx: Knex.Transaction;
  outer: OpenTransaction | undefined;
  /** Where the last statement on the root db was built in this context (knex runs it from a microtask, whose stack has none of our frames). */
  builtAt?: string;
}

interface GuardedClient {
  transaction(container: unknown, config: unknown, outerTx: unknown): unknown;
  acquireConnection(): Promise<unknown>;
  queryBuilder(...args: unknown[]): unknown;
  raw(...args: unknown[]): unknown;
  __transactionGuard?: true;
}

const openTransactions = new AsyncLocalStorage<OpenTransaction>();
const state: {
  mode: TransactionGuardMode;
  warn: (message: string) => void;
  warned: Set<string>;
  violations: SecondConnectionError[];
} = { mode: 'off', warn: (message) => process.emitWarning(message), warned: new Set(), violations: [] };

/** Sets the process's guard mode (at boot; the test hooks set `throw`); `warn` receives `warn`'s lines. */
export function setTransactionGuard(mode: TransactionGuardMode, warn?: (message: string) => void): void {
  state.mode = mode;
  if (warn) state.warn = warn;
}

/** The violations seen since the last call (in `throw` mode), cleared: the test hooks fail a test that had one its code swallowed. */
export function takeTransactionGuardViolations(): SecondConnectionError[] {
  return state.violations.splice(0);
}

/**
 * Runs `work` outside every open transaction's marking: for work started inside a transaction that
 * does not hold it up (a fire-and-forget notification, a timer that outlives it) and may take its
 * own connection. What the transaction awaits never belongs here.
 */
export function outsideTransaction<T>(work: () => T): T {
  return openTransactions.exit(work);
}

/** Installs the guard on a knex instance's pool (every instance `createDb` makes). */
export function guardPool(db: Knex): void {
  const client = db.client as GuardedClient;
  if (client.__transactionGuard) return;
  client.__transactionGuard = true;
  const transaction = client.transaction;
  // Top-level transactions only: a savepoint (`trx.transaction`) goes through the trx's own client and stays in its parent's context.
  client.transaction = function (container, config, outerTx) {
    if (state.mode === 'off' || typeof container !== 'function') return transaction.call(this, container, config, outerTx);
    const work = container as (trx: Knex.Transaction) => unknown;
    const outer = openTransactions.getStore();
    return transaction.call(this, (trx: Knex.Transaction) => openTransactions.run({ pool: client, trx, outer }, () => work(trx)), config, outerTx);
  };
  // Statements on the root db built inside an open transaction remember where (a stack only then: nothing in the common case).
  for (const make of ['queryBuilder', 'raw'] as const) {
    const build = client[make];
    client[make] = function (...args: unknown[]) {
      const open = state.mode === 'off' ? undefined : openOn(client);
      if (open) open.builtAt = new Error().stack;
      return build.apply(this, args);
    };
  }
  const acquireConnection = client.acquireConnection;
  client.acquireConnection = function () {
    if (state.mode !== 'off') check(client);
    return acquireConnection.call(this);
  };
}

function openOn(pool: object): OpenTransaction | undefined {
  let open = openTransactions.getStore();
  while (open && (open.pool !== pool || open.trx.isCompleted())) open = open.outer;
  return open;
}

function check(pool: object): void {
  const open = openOn(pool);
  if (!open) return;
  const error = new SecondConnectionError(
    'a statement asked the pool for a second connection while this async context holds an open transaction on it: ' +
      'run it on the transaction (pass `trx` down as `db`), before or after it, or, when the transaction does not wait for it, in outsideTransaction()',
  );
  // Our frames: the acquisition's own when it came from our code (pg-boss on the shared pool), else where the statement was built.
  const site = ourFrames(error.stack) || ourFrames(open.builtAt);
  open.builtAt = undefined;
  error.stack = `${error.name}: ${error.message}\n${site}`;
  if (state.mode === 'throw') {
    state.violations.push(error);
    throw error;
  }
  if (state.warned.has(site) || state.warned.size >= 100) return;
  state.warned.add(site);
  state.warn(error.stack);
}

/** A stack's frames in our code (not the guard's, knex's or node's), the first few: one warning per place. */
const ourFrames = (stack: string | undefined) =>
  (stack ?? '')
    .split('\n')
    .slice(1)
    .filter((line) => !line.includes('node_modules') && !line.includes('db/transaction-guard.ts') && !line.includes('(node:'))
    .slice(0, 6)
    .join('\n');
