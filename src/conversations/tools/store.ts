// The SQL of a turn's tool rounds: each round's assistant message with its tool calls, a row per
// call (status, result, credits), the tool messages with the results — each chained under the
// previous, so the branch holds them all and the answer goes under the last.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { ChatMessage, ChatToolCall, ChatUsage } from '../../providers/chat/index.ts';
import { notifyRunEvent } from '../run-notify.ts';
import type { RunRow } from '../run-row.ts';

export interface ToolCallRow {
  id: string;
  run_id: string;
  tool_call_id: string;
  round: number;
  position: number;
  name: string;
  arguments: string;
  status: 'running' | 'awaiting_approval' | 'succeeded' | 'failed';
  approved: boolean | null;
  /** Who approved or rejected it, and when (null: it needed no approval, or waits). */
  decided_by_id: string | null;
  decided_at: Date | null;
  result: string | null;
  credits: number;
  metered_call_id: string | null;
  message_id: string | null;
  created_at: Date;
  finished_at: Date | null;
}

/** A tool result longer than this is cut (with a note) before it is stored and shown to the model. */
export const TOOL_RESULT_MAX_CHARS = 16_000;

export const truncateResult = (text: string) =>
  text.length <= TOOL_RESULT_MAX_CHARS ? text : `${text.slice(0, TOOL_RESULT_MAX_CHARS)}… [truncated: ${text.length} characters in all]`;

export const loadToolCalls = async (db: Knex, runId: string) =>
  (await db('chat_tool_calls').where({ run_id: runId }).orderBy(['round', 'position'])) as ToolCallRow[];

/** The messages the turn wrote so far (its rounds), oldest first, as the model reads them. */
export async function turnMessages(db: Knex, run: RunRow): Promise<ChatMessage[]> {
  if (run.tail_message_id === null || run.tail_message_id === run.message_id) return [];
  const { rows } = await db.raw(
    `WITH RECURSIVE mine AS (
       SELECT m.id, m.parent_id, m.role, m.content, m.tool_calls, m.tool_call_id, 0 AS height FROM conversation_messages m WHERE m.id = ?
       UNION ALL
       SELECT p.id, p.parent_id, p.role, p.content, p.tool_calls, p.tool_call_id, b.height + 1
         FROM conversation_messages p JOIN mine b ON p.id = b.parent_id
        WHERE p.id IS DISTINCT FROM ?
     )
     SELECT role, content, tool_calls, tool_call_id FROM mine ORDER BY height DESC`,
    [run.tail_message_id, run.message_id],
  );
  return (rows as { role: ChatMessage['role']; content: string; tool_calls: ChatToolCall[] | null; tool_call_id: string | null }[]).map((m) => ({
    role: m.role,
    content: m.content,
    ...(m.tool_calls && { tool_calls: m.tool_calls }),
    ...(m.tool_call_id && { tool_call_id: m.tool_call_id }),
  }));
}

async function appendMessage(trx: Knex.Transaction, run: RunRow, parentId: string | null, message: Record<string, unknown>): Promise<string> {
  const [inserted] = (await trx('conversation_messages')
    .insert({
      conversation_id: run.conversation_id,
      organization_id: run.organization_id,
      parent_id: parentId,
      metadata: { run_id: run.id, model: run.model },
      ...message,
    })
    .returning(['id', 'created_at'])) as { id: string; created_at: Date }[];
  await trx('conversations')
    .where({ id: run.conversation_id })
    .update({ last_message_at: inserted!.created_at, message_count: trx.raw('message_count + 1') });
  return inserted!.id;
}

/** A round the model asked tools in: its message (text and calls) under the tail, a row per call; the run's tail and usage so far move on. */
export async function recordRound(
  trx: Knex.Transaction,
  run: RunRow,
  parentId: string | null,
  round: number,
  content: string,
  calls: readonly ChatToolCall[],
  usage: ChatUsage,
): Promise<{ messageId: string; rows: ToolCallRow[] }> {
  // The conversation row before the run's (the order every writer of a turn takes).
  const messageId = await appendMessage(trx, run, parentId, { role: 'assistant', content, tool_calls: JSON.stringify(calls) });
  const rows = (await trx('chat_tool_calls')
    .insert(
      calls.map((call, position) => ({
        run_id: run.id,
        tool_call_id: call.id,
        round,
        position,
        name: call.name,
        arguments: call.arguments,
        metered_call_id: randomUUID(),
      })),
    )
    .returning('*')) as ToolCallRow[];
  await trx('chat_runs')
    .where({ id: run.id })
    .update({ tail_message_id: messageId, rounds_usage: JSON.stringify(usage), updated_at: trx.fn.now() });
  await notifyRunEvent(trx, run, 0);
  return { messageId, rows: rows.sort((a, b) => a.position - b.position) };
}

/** A call's outcome (once: a retried attempt does not overwrite it); followers are told at commit. */
export async function finishToolCall(
  trx: Knex.Transaction,
  run: RunRow,
  rowId: string,
  outcome: { status: 'succeeded' | 'failed'; result: string; credits: number },
): Promise<void> {
  await trx('chat_tool_calls')
    .where({ id: rowId, status: 'running' })
    .update({ status: outcome.status, result: truncateResult(outcome.result), credits: outcome.credits, finished_at: trx.fn.now() });
  await notifyRunEvent(trx, run, 0);
}

/** The round's results as `tool` messages, in the order the model asked for them, chained under its message; returns the new tail. */
export async function recordToolResults(
  trx: Knex.Transaction,
  run: RunRow,
  parentId: string,
  round: number,
): Promise<{ tail: string; messages: ChatMessage[] }> {
  const rows = (await trx('chat_tool_calls').where({ run_id: run.id, round }).orderBy('position')) as ToolCallRow[];
  let tail = parentId;
  const messages: ChatMessage[] = [];
  for (const row of rows) {
    if (row.message_id !== null) {
      tail = row.message_id;
      messages.push({ role: 'tool', tool_call_id: row.tool_call_id, content: toolContent(row) });
      continue;
    }
    const content = toolContent(row);
    tail = await appendMessage(trx, run, tail, { role: 'tool', content, tool_call_id: row.tool_call_id });
    await trx('chat_tool_calls').where({ id: row.id }).update({ message_id: tail });
    messages.push({ role: 'tool', tool_call_id: row.tool_call_id, content });
  }
  await trx('chat_runs').where({ id: run.id }).update({ tail_message_id: tail, updated_at: trx.fn.now() });
  return { tail, messages };
}

/** What the model reads for a call: its result, or its error. */
const toolContent = (row: ToolCallRow) => (row.status === 'succeeded' ? (row.result ?? '') : `Error: ${row.result ?? 'the tool did not answer'}`);

/** Credits the turn's tool calls were charged. */
export async function toolCreditsOf(db: Knex | Knex.Transaction, runId: string): Promise<number> {
  const row = (await db('chat_tool_calls').where({ run_id: runId }).sum({ credits: 'credits' }).first()) as { credits: string | number | null } | undefined;
  return Number(row?.credits ?? 0);
}

/** A turn that ended (stopped, failed) with calls still running: they end `failed`, saying why (a billed one settles on its own). */
export async function endRunningToolCalls(trx: Knex.Transaction, runId: string, why: string): Promise<void> {
  await trx('chat_tool_calls')
    .where({ run_id: runId })
    .whereIn('status', ['running', 'awaiting_approval'])
    .update({ status: 'failed', result: why, finished_at: trx.fn.now() });
}

/**
 * The round's calls that need the caller's answer wait for it; the turn waits until
 * `CHAT_APPROVAL_TTL_SECONDS` from now (then it ends: ./approvals.ts).
 */
export async function awaitApproval(trx: Knex.Transaction, run: RunRow, rowIds: readonly string[], ttlSeconds: number): Promise<void> {
  await trx('chat_tool_calls').whereIn('id', rowIds).where({ status: 'running' }).update({ status: 'awaiting_approval' });
  await trx('chat_runs')
    .where({ id: run.id })
    .update({ awaiting_approval_until: trx.raw('now() + make_interval(secs => ?)', [ttlSeconds]), updated_at: trx.fn.now() });
  await notifyRunEvent(trx, run, 0);
}
