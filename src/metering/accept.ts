/**
 * Accepting a metered call (web side): quote, check the caller's attribution and run lock, then the
 * call, its job and its credit hold. A metered read writes all three in ONE statement (the hold
 * first, then the call and its job: one round trip); a call whose `schedule` may refuse (a
 * generation checks its project there) writes them in one transaction, the hold last, so the
 * organization's balance row is locked only from the reserve to the commit. A refused hold (402)
 * leaves neither call nor job: nothing is billed, nothing runs.
 */
import type { Knex } from 'knex';
import type { Actor } from '../access/index.ts';
import { isMessageOf, runHoldingLock } from '../conversations/index.ts';
import { badRequest, conflict, isAppError } from '../core/errors.ts';
import { type CreditHold, type HoldInput, placeHold, placeHoldOnce, releaseHold, type ReserveAnswer, type ReserveStatement } from '../credits/index.ts';
import type { JobDefinition } from '../jobs/define.ts';
import type { Deps } from '../platform/deps.ts';
import { holdRunIdOfCall, insertCall, type NewCall } from './calls.ts';
import { meteredCallJob } from './jobs.ts';
import { quoteOf, type ReadOperation } from './operation.ts';
import { inTransaction } from '../db/transaction.ts';

/** The billing fields every metered call takes besides its input (spec §4.5). */
export interface CallTerms {
  organization_id: string;
  max_credits?: number | undefined;
  tool_call_id?: string | null | undefined;
  conversation_id?: string | null | undefined;
  message_id?: string | null | undefined;
  run_lock?: boolean | undefined;
}

/** How long past the read timeout a hold may stay open before the expiry job releases it (a backstop: settling releases it first). */
const HOLD_GRACE_SECONDS = 120;

/** What a call bills for: its operation's name, its quote and its (validated) input. */
export interface CallSpec {
  operation: string;
  quote: { credits: number; pages: number };
  input: unknown;
  /** How long the call may take (its hold outlives it by a margin); default READ_TIMEOUT_MS. */
  timeoutMs?: number | undefined;
}

/**
 * Writes the call (id chosen by the caller, who may already listen for its answer), then what
 * `schedule` adds in the same transaction (the job that performs it, a domain row), then the hold
 * last; with `job` instead, the hold, the call and its job in one statement.
 */
export async function acceptCall(
  deps: Pick<Deps, 'config' | 'creditPeriods' | 'db' | 'jobs'>,
  actor: Actor,
  spec: CallSpec,
  terms: CallTerms,
  call: { id: string; requestId?: string | undefined },
  /** What the call's transaction adds (the job that performs it, a domain row; may refuse), or the one job to send with the call in its statement. */
  schedule: ((trx: Knex.Transaction) => Promise<void>) | { job: JobDefinition<typeof meteredCallJob.payload> },
  /**
   * With a transaction's `schedule`, place the hold on its own before that transaction: for
   * `schedule`s that only rarely refuse (a generation re-checks the project it checked before the
   * hold: a refusal then gives the hold back, a reserve and a release in the ledger).
   */
  options: { holdFirst?: boolean } = {},
): Promise<void> {
  if (terms.max_credits !== undefined && spec.quote.credits > terms.max_credits)
    throw badRequest(`max_credits: the quoted ceiling is ${spec.quote.credits} credits, more than max_credits (${terms.max_credits}); nothing was charged`, [
      'max_credits',
    ]);
  const chatRunId = await checkAttribution(deps, actor, terms);
  const hold = {
    expiresInSeconds: Math.ceil((spec.timeoutMs ?? deps.config.READ_TIMEOUT_MS) / 1000) + HOLD_GRACE_SECONDS,
    description: `Reserved for ${spec.operation}`,
  };
  const row: NewCall = {
    id: call.id,
    organization_id: terms.organization_id,
    user_id: actor.userId,
    operation: spec.operation,
    input: spec.input,
    quoted_credits: spec.quote.credits,
    quoted_pages: spec.quote.pages,
    max_credits: terms.max_credits ?? null,
    tool_call_id: terms.tool_call_id ?? null,
    conversation_id: terms.conversation_id ?? null,
    message_id: terms.message_id ?? null,
    run_lock: terms.run_lock ?? false,
    chat_run_id: chatRunId,
    request_id: call.requestId ?? null,
  };
  if (typeof schedule === 'function') {
    if (options.holdFirst) await holdThenAccept(deps, row, hold, schedule);
    else await inTransaction(deps.db, (trx) => reserveCall(trx, deps, row, hold, schedule));
    return;
  }
  // One statement, one round trip (metered_call_accept, migrations/20261127202000_metered_read_statements.ts):
  // the call and its job (pg-boss's own insert statement, run inside it), then the hold last, so the
  // organization's balance row is locked from the hold to that statement's commit only. Refused
  // (402), the call and the job are deleted in that statement: nothing is left, nothing runs.
  const job = await deps.jobs.sendStatement(schedule.job, { call_id: call.id }, { organizationId: terms.organization_id });
  const acceptStatement: ReserveStatement = async (db, args) =>
    (
      await db.raw('SELECT * FROM metered_call_accept(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?)', [
        ...args,
        JSON.stringify(row),
        job.sql,
        job.value,
        job.unsendSql,
        schedule.job.name,
      ])
    ).rows[0] as ReserveAnswer;
  await placeHoldOnce(deps.db, deps.creditPeriods, callHoldInput(row, hold), acceptStatement);
}

/**
 * The hold alone, autocommitted: the organization's balance row is locked for that one statement,
 * never across a round trip (inside the accept transaction it stayed locked until the COMMIT came
 * back from a busy event loop, and every other hold of the organization waited behind it). A 402
 * writes nothing at all. The call and what `schedule` adds then commit together; should that fail,
 * the hold is given back at once, and should the process die in between, the hold (whose call never
 * existed) expires unused after the call's timeout — the ledger stays exact either way.
 */
async function holdThenAccept(
  deps: Pick<Deps, 'creditPeriods' | 'db'>,
  row: NewCall,
  hold: { expiresInSeconds?: number; description: string },
  schedule: (trx: Knex.Transaction) => Promise<void>,
): Promise<void> {
  const placed = await placeCallHold(deps.db, deps, row, hold);
  try {
    await inTransaction(deps.db, async (trx) => {
      await insertCall(trx, row);
      await schedule(trx);
    });
  } catch (error) {
    await inTransaction(deps.db, (trx) => releaseHold(trx, placed.id, { description: `Released: ${row.operation} was not accepted` }));
    throw error;
  }
}

/**
 * In the caller's transaction: the call's row, then what `schedule` adds (the job that performs it,
 * a domain row), then its credit hold — last, so the organization's balance row is locked only from
 * the reserve to the commit. A refused hold (402) throws and rolls all of it back.
 */
export async function reserveCall(
  trx: Knex.Transaction,
  deps: Pick<Deps, 'creditPeriods'>,
  call: NewCall,
  hold: { expiresInSeconds?: number; description: string },
  schedule: (trx: Knex.Transaction) => Promise<void> = async () => undefined,
): Promise<CreditHold> {
  await insertCall(trx, call);
  await schedule(trx);
  return placeCallHold(trx, deps, call, hold);
}

/** The credit hold of a call, found later by the call's hold run id (alone, or in the caller's transaction). */
function placeCallHold(
  db: Knex,
  deps: Pick<Deps, 'creditPeriods'>,
  call: NewCall,
  hold: { expiresInSeconds?: number; description: string },
): Promise<CreditHold> {
  return placeHold(db, deps.creditPeriods, callHoldInput(call, hold));
}

const callHoldInput = (call: NewCall, hold: { expiresInSeconds?: number; description: string }): HoldInput => ({
  organizationId: call.organization_id,
  userId: call.user_id,
  amount: call.quoted_credits,
  reason: call.operation,
  runId: holdRunIdOfCall({ id: call.id, hold_run_id: call.hold_run_id ?? null }),
  runIsNew: true,
  conversationId: call.conversation_id,
  messageId: call.message_id,
  toolCallId: call.tool_call_id,
  ...(hold.expiresInSeconds !== undefined && { expiresInSeconds: hold.expiresInSeconds }),
  description: hold.description,
});

/** A metered read: its quote from the operation, performed by the metered-call job. */
export async function acceptRead(
  deps: Deps,
  actor: Actor,
  operation: ReadOperation,
  terms: CallTerms,
  input: unknown,
  call: { id: string; requestId?: string | undefined },
): Promise<void> {
  const spec = { operation: operation.name, quote: quoteOf(operation, input), input };
  await acceptCall(deps, actor, spec, terms, call, { job: meteredCallJob });
}

/**
 * The conversation and message a call is attributed to must be ones the caller can read in the
 * same organization; with `run_lock` the conversation's turn must hold its lock now (checked again
 * at capture). Returns the run holding the lock, if asked for.
 */
async function checkAttribution(deps: Pick<Deps, 'db'>, actor: Actor, terms: CallTerms): Promise<string | null> {
  const conversationId = terms.conversation_id ?? null;
  if (conversationId === null) {
    if (terms.message_id) throw badRequest('conversation_id: is required with message_id', ['conversation_id']);
    if (terms.run_lock) throw badRequest('conversation_id: is required with run_lock', ['conversation_id']);
    return null;
  }
  const unknown = badRequest('conversation_id: is not a conversation you can read in this organization', ['conversation_id']);
  const { row } = await actor.resource(deps.db, 'chat_conversation', conversationId, 'read').catch((error: unknown) => {
    throw isAppError(error, 'not_found') ? unknown : error;
  });
  if (row.organization_id !== terms.organization_id || row.deleted_at !== null) throw unknown;
  if (terms.message_id && !(await isMessageOf(deps.db, conversationId, terms.message_id)))
    throw badRequest('message_id: is not a message of that conversation', ['message_id']);
  if (!terms.run_lock) return null;
  const holder = await runHoldingLock(deps.db, conversationId);
  if (holder === null) throw conflict('run_lock: the conversation’s turn no longer holds the run lock (it was stopped or has ended)', ['run_lock']);
  return holder;
}
