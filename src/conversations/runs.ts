/**
 * The run lock and chat runs. A run holds the conversation's lock (`active_run_id`) from its
 * acquisition until its job ends — succeeded, failed or stopped, each end freeing the lock in the
 * transaction that ends the job (./run-ends.ts) — so the lock is never stuck: a dead worker's job
 * is retried on pg-boss's heartbeat, and one that fails for good frees it.
 * Lock order: (job row) → conversation row → run row → credit rows.
 */
import type { Knex } from 'knex';
import { changeLive, requireLive } from '../access/index.ts';
import type { Actor } from '../access/index.ts';
import { requireAvailableChatModel } from '../chat-models/index.ts';
import { badRequest, conflict, isAppError, notFound } from '../core/errors.ts';
import type { z } from '../core/zod.ts';
import { inTransaction } from '../db/transaction.ts';
import type { EndReason } from '../jobs/define.ts';
import { cancelWorkOn } from '../jobs/ends.ts';
import type { EnqueueOptions } from '../jobs/enqueue.ts';
import { type Deps, onTransaction } from '../platform/deps.ts';
import { chatRunJob } from './jobs.ts';
import { isMessageOf } from './messages.ts';
import type { ConversationRow } from './presenter.ts';
import type { runSchema, startRunBody } from './run-schema.ts';
import { checkToolNames } from './tools/names.ts';
import { loadToolCalls, type ToolCallRow } from './tools/store.ts';

const type = 'chat_conversation';
import { LIVE_RUN_STATUSES, type RunRow } from './run-row.ts';

export { LIVE_RUN_STATUSES, type RunRow };
/** A run with its tool calls (read with it by GET /conversations/{id}/run). */
export type RunWithCalls = RunRow & { tool_calls?: ToolCallRow[] };

export function presentRun(row: RunWithCalls): z.input<typeof runSchema> {
  return {
    id: row.id,
    status: row.awaiting_approval_until && isLive(row) ? 'awaiting_approval' : row.status,
    conversation_id: row.conversation_id,
    organization_id: row.organization_id,
    user_id: row.user_id,
    model: row.model,
    message_id: row.message_id,
    max_credits: row.max_credits,
    snapshot: row.snapshot,
    answer_message_id: row.answer_message_id,
    credits_charged: row.credits_charged,
    error: row.error,
    context: row.context,
    tools: row.tools ?? null,
    approval_expires_at: row.awaiting_approval_until && isLive(row) ? row.awaiting_approval_until.toISOString() : null,
    tool_calls: (row.tool_calls ?? []).map((call) => ({
      tool_call_id: call.tool_call_id,
      name: call.name,
      round: call.round,
      status: call.status,
      arguments: call.arguments,
      credits: call.credits,
      message_id: call.message_id,
      approved: call.approved,
      decided_by_id: call.decided_by_id,
      decided_at: call.decided_at?.toISOString() ?? null,
    })),
    heartbeat_at: row.heartbeat_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const isLive = (run: RunRow | undefined) => run !== undefined && (LIVE_RUN_STATUSES as readonly string[]).includes(run.status);

/** The run holding the lock, if it is live (its job has not ended). */
async function liveRunOf(trx: Knex.Transaction, conversation: ConversationRow): Promise<RunRow | undefined> {
  if (conversation.active_run_id === null) return undefined;
  const run = (await trx('chat_runs').where({ id: conversation.active_run_id }).forUpdate().first()) as RunRow | undefined;
  return isLive(run) ? run : undefined;
}

/**
 * The model the run uses: the one asked for if the organization has it enabled and its provider is
 * configured (else 400); without one, the deployment's default (CHAT_DEFAULT_MODEL, on purpose, not
 * whichever sorts first), refused naming that variable when the organization cannot use it.
 */
export async function chooseModel(deps: Pick<Deps, 'config' | 'db'>, _actor: Actor, organizationId: string, asked: string | undefined): Promise<string> {
  if (asked !== undefined) return (await requireAvailableChatModel(deps, asked, organizationId)).model.id;
  const fallback = deps.config.CHAT_DEFAULT_MODEL;
  try {
    return (await requireAvailableChatModel(deps, fallback, organizationId)).model.id;
  } catch (error) {
    if (!isAppError(error, 'validation_failed')) throw error;
    throw badRequest(
      `model: none given, and the default chat model "${fallback}" (CHAT_DEFAULT_MODEL) cannot be used by this organization (${error.message.replace(/^model: /, '')}); name one of GET /chat-models/available`,
      ['model'],
    );
  }
}

export interface StartRunOptions extends Pick<EnqueueOptions, 'continueWith'> {
  /** Places the run's credit hold in the starting transaction (last: it locks the balance row) and returns its id; a refusal (402) undoes the start. */
  reserve?: (trx: Knex.Transaction, run: RunRow) => Promise<string>;
}

/** Acquires the lock and enqueues the chat-run job in one transaction; 409 while a live run holds it. */
export function startRun(
  deps: Deps,
  actor: Actor,
  conversationId: string,
  input: z.output<typeof startRunBody>,
  options: StartRunOptions = {},
): Promise<RunRow> {
  return changeLive<ConversationRow, RunRow>(deps, actor, type, conversationId, async (trx, conversation) => {
    const holder = await liveRunOf(trx, conversation);
    if (holder) throw conflict(`run: run ${holder.id} is running in this conversation; stop it first`, ['run']);
    if (input.message_id !== undefined && !(await isMessageOf(trx, conversationId, input.message_id)))
      throw badRequest('message_id: is not a message of this conversation', ['message_id']);
    const messageId = input.message_id ?? conversation.active_leaf_id;
    if (messageId === null) throw badRequest('message_id: the conversation has no message to answer', ['message_id']);
    const model = await chooseModel(onTransaction(deps, trx), actor, conversation.organization_id, input.model);
    if (input.tools) await checkToolNames(trx, deps.reads, conversation.organization_id, actor.userId, input.tools);
    const [run] = (await trx('chat_runs')
      .insert({
        conversation_id: conversationId,
        organization_id: conversation.organization_id,
        user_id: actor.userId,
        model,
        message_id: messageId,
        max_credits: input.max_credits ?? null,
        tools: input.tools ? JSON.stringify(input.tools) : null,
      })
      .returning('*')) as RunRow[];
    await trx('conversations').where({ id: conversationId }).update({ active_run_id: run!.id, active_run_at: trx.fn.now() });
    await deps.jobs.enqueue(trx, chatRunJob, { run_id: run!.id }, { organizationId: conversation.organization_id, continueWith: options.continueWith });
    if (!options.reserve) return run!;
    const holdId = await options.reserve(trx, run!);
    const [held] = (await trx('chat_runs').where({ id: run!.id }).update({ hold_id: holdId }).returning('*')) as RunRow[];
    return held!;
  });
}

/** The conversation's current run, else its latest one; 404 when it never had one. */
export async function getRun(deps: Pick<Deps, 'db'>, actor: Actor, conversationId: string): Promise<RunWithCalls> {
  const { row: conversation } = await actor.resource<ConversationRow>(deps.db, type, conversationId, 'read');
  const query = deps.db('chat_runs').where({ conversation_id: conversationId });
  const run = (await (conversation.active_run_id === null
    ? query
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .first()
    : query.where({ id: conversation.active_run_id }).first())) as RunRow | undefined;
  if (!run) throw notFound('run');
  return { ...run, tool_calls: await loadToolCalls(deps.db, run.id) };
}

/** Stores a client's partial output of the running turn; 409 when no live run holds the lock. */
export function saveRunSnapshot(deps: Pick<Deps, 'db'>, actor: Actor, conversationId: string, content: string): Promise<RunRow> {
  return changeLive<ConversationRow, RunRow>(deps, actor, type, conversationId, async (trx, conversation) => {
    const run = await liveRunOf(trx, conversation);
    if (!run) throw conflict('run: no run is running in this conversation', ['run']);
    const [updated] = (await trx('chat_runs')
      .where({ id: run.id })
      .update({ snapshot: content, stream_epoch: trx.raw('stream_epoch + 1'), updated_at: trx.fn.now() })
      .returning('*')) as RunRow[];
    return updated!;
  });
}

/**
 * Stops the turn: its job is canceled, which ends the run `stopped` in the same transaction — the
 * answer as its followers saw it kept and charged, the rest of the hold released, the lock free —
 * and the worker is told at commit and aborts the provider call. No live run: nothing to do
 * (idempotent). The job row is locked before the conversation (the order the worker's end takes).
 */
export async function stopRun(deps: Deps, actor: Actor, conversationId: string): Promise<void> {
  const { row: conversation } = await actor.resource<ConversationRow>(deps.db, type, conversationId, 'edit');
  requireLive(conversation, type);
  if (conversation.active_run_id === null) return;
  await stopRunById(deps, conversation.active_run_id, { code: 'stopped', message: 'stopped by the caller' });
}

/** Stops a run by id (a scheduled task's run canceled): its job canceled with the run's end; a run whose job is gone is ended directly. */
export async function stopRunById(deps: Deps, runId: string, reason: EndReason): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    if ((await cancelWorkOn(trx, deps, chatRunJob, 'run_id', runId, reason)) === 0)
      await (await deps.jobs.endsOf(chatRunJob)).canceled(trx, { run_id: runId }, reason, { deps, jobId: null });
  });
}

/**
 * The run holding the conversation's lock (a live run), else null: what a tool call made "under the
 * run lock" checks. With `share`, the conversation row is share-locked until the caller commits, so
 * a stop (which updates that row) cannot slip between the check and what the caller does next.
 */
export async function runHoldingLock(db: Knex | Knex.Transaction, conversationId: string, options: { share?: boolean } = {}): Promise<string | null> {
  const { rows } = await db.raw(
    `SELECT c.active_run_id FROM conversations c
       JOIN chat_runs r ON r.id = c.active_run_id::uuid AND r.status IN ('queued', 'running')
      WHERE c.id = ? AND c.deleted_at IS NULL${options.share ? ' FOR SHARE OF c' : ''}`,
    [conversationId],
  );
  return (rows[0]?.active_run_id as string | undefined) ?? null;
}
