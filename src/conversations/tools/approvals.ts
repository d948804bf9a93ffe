/**
 * Tool calls that need approval: the turn records them `awaiting_approval` and its job ends (no
 * worker slot waits); the caller approves or rejects each (POST /conversations/{id}/run/approvals),
 * and once none is left the turn continues as a new job — an approved call runs, a rejected one
 * goes back to the model as "rejected by the user". Only the turn's user answers (the call runs
 * with their credential), each answer kept on the call and in the activity feed. Unanswered past the deadline, the turn is
 * stopped (its hold settled, the lock freed).
 */
import { type Actor, changeLive } from '../../access/index.ts';
import { recordActivity } from '../../core/activity.ts';
import { badRequest, conflict, forbidden } from '../../core/errors.ts';
import type { z } from '../../core/zod.ts';
import { type JobContext, type NothingToDo, nothingToDo } from '../../jobs/define.ts';
import type { JobQueue } from '../../jobs/enqueue.ts';
import type { Deps, MemberRemovedListener } from '../../platform/deps.ts';
import { approvalExpiryJob, type ChatRunPayload, chatRunJob } from '../jobs.ts';
import type { ConversationRow } from '../presenter.ts';
import { notifyRunEvent } from '../run-notify.ts';
import { LIVE_RUN_STATUSES, type RunRow } from '../run-row.ts';
import type { approvalsBody } from '../run-schema.ts';
import { type RunWithCalls, stopRunById } from '../runs.ts';
import { loadToolCalls, type ToolCallRow } from './store.ts';

export const REJECTED = 'rejected by the user';

export function answerApprovals(
  deps: Pick<Deps, 'db' | 'jobs'>,
  actor: Actor,
  conversationId: string,
  input: z.output<typeof approvalsBody>,
): Promise<RunWithCalls> {
  return changeLive<ConversationRow, RunWithCalls>(deps, actor, 'chat_conversation', conversationId, async (trx, conversation) => {
    const run =
      conversation.active_run_id === null
        ? undefined
        : ((await trx('chat_runs').where({ id: conversation.active_run_id }).forUpdate().first()) as RunRow | undefined);
    if (!run || !(LIVE_RUN_STATUSES as readonly string[]).includes(run.status) || run.awaiting_approval_until === null)
      throw conflict('run: no turn of this conversation is waiting for approval', ['run']);
    // The turn acts for its user, with their credentials: only they answer for it (editors of the conversation included).
    if (run.user_id !== actor.userId) throw forbidden(`run: the turn waiting for approval is ${run.user_id}'s; only they may approve or reject its tool calls`);
    const waiting = (await trx('chat_tool_calls').where({ run_id: run.id, status: 'awaiting_approval' })) as ToolCallRow[];
    const answered = new Set<string>();
    for (const [i, decision] of input.decisions.entries()) {
      const row = waiting.find((call) => call.tool_call_id === decision.tool_call_id && !answered.has(call.id));
      if (!row)
        throw badRequest(`decisions[${i}].tool_call_id: ${decision.tool_call_id} is not a call of this turn waiting for approval`, [
          'decisions',
          i,
          'tool_call_id',
        ]);
      answered.add(row.id);
      const decided = { decided_by_id: actor.userId, decided_at: trx.fn.now() };
      await trx('chat_tool_calls')
        .where({ id: row.id })
        .update(
          decision.approve
            ? { status: 'running', approved: true, ...decided }
            : { status: 'failed', approved: false, result: REJECTED, finished_at: trx.fn.now(), ...decided },
        );
      await recordActivity(trx, {
        organizationId: run.organization_id,
        actorId: actor.userId,
        action: decision.approve ? 'conversation.tool_call.approved' : 'conversation.tool_call.rejected',
        subjectType: 'chat_conversation',
        subjectId: conversationId,
        data: { run_id: run.id, tool_call_id: row.tool_call_id, name: row.name },
      });
    }
    const left = waiting.length - answered.size;
    let updated: RunRow = run;
    if (left === 0) {
      // Every call answered: the turn goes on as a new job (it resumes at the round's calls).
      const [row] = (await trx('chat_runs')
        .where({ id: run.id })
        .update({ awaiting_approval_until: null, updated_at: trx.fn.now() })
        .returning('*')) as RunRow[];
      updated = row!;
      await deps.jobs.enqueue(trx, chatRunJob, { run_id: run.id }, { organizationId: run.organization_id });
    }
    await notifyRunEvent(trx, run, 0);
    return { ...updated, tool_calls: await loadToolCalls(trx, run.id) };
  });
}

/**
 * `Deps.memberRemoved`: the member's turns waiting for approval can no longer be answered (only
 * their user answers, and they are gone): their deadline is brought to now and the expiry job sent
 * in the removing transaction, so each is stopped at once — usage charged, the rest of its hold
 * released, the lock freed — instead of at CHAT_APPROVAL_TTL_SECONDS.
 */
export function endApprovalsOfRemovedMember(jobs: JobQueue): MemberRemovedListener {
  return async (trx, { organizationId, userId }): Promise<Record<string, number>> => {
    const ended = (await trx('chat_runs')
      .where({ organization_id: organizationId, user_id: userId })
      .whereIn('status', LIVE_RUN_STATUSES)
      .whereNotNull('awaiting_approval_until')
      .update({ awaiting_approval_until: trx.fn.now(), updated_at: trx.fn.now() })
      .returning('id')) as { id: string }[];
    for (const { id } of ended) await jobs.enqueue(trx, approvalExpiryJob, { run_id: id }, { organizationId });
    return ended.length ? { approvals_ended: ended.length } : {};
  };
}

/** The deadline passed with calls unanswered: the turn is stopped (a turn answered meanwhile, or ended, needs nothing). */
export async function expireApproval({ run_id }: ChatRunPayload, { deps }: JobContext): Promise<NothingToDo | undefined> {
  const run = (await deps.db('chat_runs').where({ id: run_id }).first()) as RunRow | undefined;
  if (!run || !(LIVE_RUN_STATUSES as readonly string[]).includes(run.status) || run.awaiting_approval_until === null)
    return nothingToDo('the turn is not waiting for approval');
  if (run.awaiting_approval_until.getTime() > Date.now()) return nothingToDo('a later round waits until a later deadline');
  await stopRunById(deps, run_id, { code: 'approval_expired', message: 'the tool calls were not approved in time' });
  return undefined;
}
