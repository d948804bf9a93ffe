// Worker side of the chat run (loaded by the `handler` of chatRunJob in ./jobs.ts).
import type { Knex } from 'knex';
import { effectiveChatModel, effectivePrices } from '../chat-models/index.ts';
import { isAppError } from '../core/errors.ts';
import { captureHold, getHold, placeHoldOnce, releaseHold } from '../credits/index.ts';
import type { JobContext } from '../jobs/define.ts';
import type { Deps } from '../platform/deps.ts';
import type { ChatMessage, ChatUsage } from '../providers/chat/index.ts';
import type { ChatRunPayload } from './jobs.ts';
import { notifyRunEvent } from './run-notify.ts';
import { LIVE_RUN_STATUSES, type RunRow } from './runs.ts';

/** How often a streaming run writes its snapshot and heartbeat, and looks whether it was stopped. */
const TICK_MS = 250;
/** Answer length assumed for the credit ceiling when neither the run nor the model names one. */
const DEFAULT_MAX_TOKENS = 1024;
const CHAT_RUN = 'chat_run';

type Prices = ReturnType<typeof effectivePrices>;

/** About four characters a token (what the sandbox reports too), for a turn the provider never reported. */
const estimateTokens = (text: string) => (text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4)));
const creditsFor = (usage: ChatUsage, prices: Prices) =>
  Math.ceil((usage.input_tokens * prices.input_credits_per_1k_tokens + usage.output_tokens * prices.output_credits_per_1k_tokens) / 1000);

const loadRun = async (db: Knex, id: string) => (await db('chat_runs').where({ id }).first()) as RunRow | undefined;

/** The branch root → answered message, as the model's prompt. */
async function promptOf(db: Knex, run: RunRow): Promise<ChatMessage[]> {
  if (run.message_id === null) return [];
  const { rows } = await db.raw(
    `WITH RECURSIVE branch AS (
       SELECT m.id, m.parent_id, m.role, m.content, 0 AS height FROM conversation_messages m WHERE m.id = ? AND m.conversation_id = ?
       UNION ALL
       SELECT p.id, p.parent_id, p.role, p.content, b.height + 1 FROM conversation_messages p JOIN branch b ON p.id = b.parent_id
     )
     SELECT role, content FROM branch ORDER BY height DESC`,
    [run.message_id, run.conversation_id],
  );
  return rows as ChatMessage[];
}

/** Locks the conversation, then the run (the order the API uses); null when the run is already finished. */
async function lockUnfinished(trx: Knex.Transaction, run: RunRow): Promise<RunRow | null> {
  await trx('conversations').where({ id: run.conversation_id }).forUpdate().first('id');
  const current = (await trx('chat_runs').where({ id: run.id }).forUpdate().first()) as RunRow;
  return current.credits_charged === null ? current : null;
}

/** Frees the conversation's lock if this run still holds it (a newer run may have taken it over). */
const releaseLock = (trx: Knex.Transaction, run: RunRow) =>
  trx('conversations').where({ id: run.conversation_id, active_run_id: run.id }).update({ active_run_id: null, active_run_at: null });

/** Ends a run that will not answer: its held credits go back, its lock is freed; once. */
async function abandon(deps: Deps, run: RunRow, error: { code: string; message: string } | null): Promise<void> {
  await deps.db.transaction(async (trx) => {
    const current = await lockUnfinished(trx, run);
    if (!current) return;
    if (current.hold_id !== null) {
      const hold = await getHold(trx, current.hold_id);
      if (hold?.status === 'held') await releaseHold(trx, hold.id, { description: 'Released: the chat run did not answer' });
    }
    await trx('chat_runs')
      .where({ id: run.id })
      .update({ status: current.status === 'stopped' ? 'stopped' : 'failed', error: error ?? current.error, credits_charged: 0, updated_at: trx.fn.now() });
    await releaseLock(trx, run);
    await notifyRunEvent(trx, run, current.snapshot.length);
  });
}

/** Reserve → stream → append, capture and unlock. Every step checks the run first, so a retry repeats none. */
export async function runChat({ run_id }: ChatRunPayload, { deps, log, signal, lastAttempt }: JobContext): Promise<void> {
  const run = await loadRun(deps.db, run_id);
  if (!run || run.credits_charged !== null) return;
  // Taken over after its worker died, or stopped before it started: nothing to answer.
  if (run.status === 'failed' || (run.status === 'stopped' && run.hold_id === null)) return abandon(deps, run, null);

  const [effective, prompt] = await Promise.all([effectiveChatModel(deps, run.model, run.organization_id), promptOf(deps.db, run)]);
  const prices = effectivePrices(effective);
  const parameters = { ...(effective.copy?.default_parameters ?? {}) };
  const promptTokens = prompt.reduce((sum, m) => sum + estimateTokens(m.content), 0);

  // Running from here: with the hold in the same transaction (first attempt), else on its own (a retry).
  const markRunning = (db: Knex, changes: Record<string, unknown> = {}) =>
    db('chat_runs')
      .where({ id: run.id })
      .update({ ...changes, status: db.raw(`CASE WHEN status = 'queued' THEN 'running' ELSE status END`), heartbeat_at: db.fn.now(), updated_at: db.fn.now() })
      .returning('*') as Promise<RunRow[]>;
  let holdId = run.hold_id;
  let before: RunRow;
  if (holdId === null) {
    const ceiling =
      run.max_credits ?? Math.max(1, creditsFor({ input_tokens: promptTokens, output_tokens: parameters.max_tokens ?? DEFAULT_MAX_TOKENS }, prices));
    try {
      [holdId, before] = await deps.db.transaction(async (trx) => {
        const { hold } = await placeHoldOnce(trx, deps.creditPeriods, {
          organizationId: run.organization_id,
          userId: run.user_id,
          amount: ceiling,
          reason: CHAT_RUN,
          runId: run.id,
          conversationId: run.conversation_id,
          messageId: run.message_id,
          description: 'Reserved for a chat run',
        });
        const [updated] = await markRunning(trx, { hold_id: hold.id });
        return [hold.id, updated!] as const;
      });
    } catch (error) {
      if (isAppError(error, 'payment_required')) {
        log.warn({ run_id, reason: error.message }, 'chat run refused: no credits');
        return abandon(deps, run, { code: 'payment_required', message: error.message });
      }
      throw error;
    }
  } else {
    [before] = (await markRunning(deps.db)) as [RunRow];
  }

  // Stream unless the answer is already appended (a retry after that step) or the run was stopped meanwhile.
  let answer = before.answer_message_id === null ? '' : before.snapshot;
  let usage: ChatUsage | undefined;
  if (before.answer_message_id === null && (LIVE_RUN_STATUSES as readonly string[]).includes(before.status)) {
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener('abort', onAbort);
    let stopped = false;
    let ticking = false;
    let notified = -1;
    const tick = async () => {
      if (ticking) return;
      ticking = true;
      try {
        const rows = await deps
          .db('chat_runs')
          .where({ id: run.id })
          .whereIn('status', LIVE_RUN_STATUSES)
          .update({ snapshot: answer, heartbeat_at: deps.db.fn.now(), updated_at: deps.db.fn.now() })
          .returning('id');
        if (rows.length === 0) {
          stopped = true;
          controller.abort(new Error('the chat run was stopped'));
        } else if (answer.length !== notified) {
          // SSE followers (./run-events.ts) re-read the snapshot; only when it grew.
          notified = answer.length;
          await notifyRunEvent(deps.db, run, notified);
        }
      } catch (error) {
        log.warn({ err: error, run_id }, 'chat run snapshot failed');
      } finally {
        ticking = false;
      }
    };
    const timer = setInterval(() => void tick(), TICK_MS);
    let published = false;
    try {
      for await (const chunk of deps.providers.chat.stream({ model: run.model, messages: prompt, parameters, signal: controller.signal })) {
        if ('delta' in chunk) {
          answer += chunk.delta;
          // The first words go out at once (followers see the turn start); later ones with the next tick.
          if (!published && answer.length > 0) {
            published = true;
            void tick();
          }
        } else usage = chunk.usage;
      }
    } catch (error) {
      if (!stopped) {
        if (signal.aborted || !lastAttempt) throw error;
        log.warn({ err: error, run_id }, 'chat run failed at the provider');
        return abandon(deps, run, { code: 'provider_failed', message: error instanceof Error ? error.message : String(error) });
      }
      log.info({ run_id }, 'chat run stopped: provider call aborted');
    } finally {
      clearInterval(timer);
      signal.removeEventListener('abort', onAbort);
    }
  } else if (before.answer_message_id === null) {
    answer = before.snapshot;
  }

  await finish(deps, run, holdId, answer, usage ?? { input_tokens: promptTokens, output_tokens: estimateTokens(answer) }, prices);
}

/** One transaction: the assistant message, the capture (`metadata.model`; the rest released), the run's end, the lock. */
async function finish(deps: Deps, run: RunRow, holdId: string, answer: string, usage: ChatUsage, prices: Prices): Promise<void> {
  await deps.db.transaction(async (trx) => {
    const current = await lockUnfinished(trx, run);
    if (!current) return;
    if (current.status === 'failed') {
      const hold = await getHold(trx, holdId);
      if (hold?.status === 'held') await releaseHold(trx, holdId, { description: 'Released: the chat run was taken over' });
      await trx('chat_runs').where({ id: run.id }).update({ credits_charged: 0, updated_at: trx.fn.now() });
      await notifyRunEvent(trx, run, current.snapshot.length);
      return;
    }
    let answerId = current.answer_message_id;
    if (answerId === null && answer.length > 0) {
      const [inserted] = (await trx('conversation_messages')
        .insert({
          conversation_id: run.conversation_id,
          organization_id: run.organization_id,
          parent_id: run.message_id,
          role: 'assistant',
          content: answer,
          metadata: { run_id: run.id, model: run.model },
        })
        .returning('id')) as { id: string }[];
      answerId = inserted!.id;
      await trx('conversations')
        .where({ id: run.conversation_id })
        .update({
          active_leaf_id: answerId,
          last_message_at: trx.raw('(SELECT created_at FROM conversation_messages WHERE id = ?)', [answerId]),
          message_count: trx.raw('message_count + 1'),
        });
    }
    const hold = await getHold(trx, holdId);
    let charged = hold?.captured ?? 0;
    if (hold?.status === 'held') {
      charged = Math.min(creditsFor(usage, prices), hold.amount - hold.captured - hold.released);
      await captureHold(trx, holdId, charged, { metadata: { model: run.model }, description: `Used by a chat run (${run.model})` });
    }
    await trx('chat_runs')
      .where({ id: run.id })
      .update({
        status: current.status === 'stopped' ? 'stopped' : 'succeeded',
        snapshot: answer,
        answer_message_id: answerId,
        credits_charged: charged,
        heartbeat_at: trx.fn.now(),
        updated_at: trx.fn.now(),
      });
    await releaseLock(trx, run);
    // Delivered at commit: SSE followers read the final snapshot and send `done`.
    await notifyRunEvent(trx, run, answer.length);
  });
}
