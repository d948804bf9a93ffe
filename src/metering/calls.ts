// The SQL of metered calls (one row per billed read): insert, start, lock and read.
import type { Knex } from 'knex';
import type { ReadFailureKind } from '../core/read-failure.ts';

export const OPEN_STATUSES = ['queued', 'running'] as const;
export type CallStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled' | 'refused';

/** Why a call ended without a result: a provider failure, or the web side giving up (timeout, hang-up), or the run lock gone. */
export type CallErrorCode = ReadFailureKind | 'canceled' | 'run_lock';

export interface CallRow {
  id: string;
  organization_id: string;
  user_id: string;
  operation: string;
  input: unknown;
  status: CallStatus;
  quoted_credits: number;
  quoted_pages: number;
  max_credits: number | null;
  tool_call_id: string | null;
  conversation_id: string | null;
  message_id: string | null;
  run_lock: boolean;
  chat_run_id: string | null;
  request_id: string | null;
  /** Its hold's run id when not `metered-call:<id>` (a chat turn's hold is its run's id). */
  hold_run_id: string | null;
  result: unknown;
  pages: number | null;
  credits_charged: number | null;
  error: { code: CallErrorCode; message: string } | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

export type NewCall = Pick<
  CallRow,
  | 'id'
  | 'organization_id'
  | 'user_id'
  | 'operation'
  | 'input'
  | 'quoted_credits'
  | 'quoted_pages'
  | 'max_credits'
  | 'tool_call_id'
  | 'conversation_id'
  | 'message_id'
  | 'run_lock'
  | 'chat_run_id'
  | 'request_id'
> &
  Partial<Pick<CallRow, 'hold_run_id'>>;

/** The hold of a call is found by this run id (unique per organization), so the call row needs no second write under the balance lock. */
export const holdRunIdOf = (callId: string) => `metered-call:${callId}`;

/** The run id of this call's hold: the default, or the one it names (a chat turn's). */
export const holdRunIdOfCall = (call: Pick<CallRow, 'id' | 'hold_run_id'>) => call.hold_run_id ?? holdRunIdOf(call.id);

export const isOpen = (call: Pick<CallRow, 'status'>) => (OPEN_STATUSES as readonly string[]).includes(call.status);

export async function insertCall(trx: Knex.Transaction, call: NewCall): Promise<void> {
  await trx('metered_calls').insert({ ...call, input: JSON.stringify(call.input) });
}

export const loadCall = async (db: Knex, id: string) => (await db('metered_calls').where({ id }).first()) as CallRow | undefined;

/**
 * Marks an open call running (again, on a retried attempt); undefined when it is already settled.
 * `fence`: only while this condition holds (the job attempt still owns its job), in the same statement.
 */
export async function startCall(db: Knex | Knex.Transaction, id: string, fence?: [string, readonly Knex.Value[]]): Promise<CallRow | undefined> {
  const [row] = (await db('metered_calls')
    .where({ id })
    .whereIn('status', OPEN_STATUSES)
    .modify((query) => {
      if (fence) query.whereRaw(...fence);
    })
    .update({ status: 'running', started_at: db.raw('coalesce(started_at, now())') })
    .returning('*')) as CallRow[];
  return row;
}

export async function lockCall(trx: Knex.Transaction, id: string): Promise<CallRow | undefined> {
  return (await trx('metered_calls').where({ id }).forUpdate().first()) as CallRow | undefined;
}
