// What a scheduled task's run does in conversations: a conversation of its own, the prompt, one chat run (one run, or a batch at once).
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { type Actor, actorFor } from '../access/index.ts';
import { isAppError } from '../core/errors.ts';
import type { Deps } from '../platform/deps.ts';
import { chatRunJob } from './jobs.ts';
import { postMessage } from './messages.ts';
import type { EnqueueOptions } from '../jobs/enqueue.ts';
import { defaultTurnCeiling } from './run-pricing.ts';
import { chooseModel, getRun, type RunRow, startRun, stopRunById } from './runs.ts';
import { createConversation } from './service.ts';

export interface ScheduledTurn {
  organizationId: string;
  scheduleId: string;
  title: string;
  prompt: string;
  model: string | null;
  maxCredits: number | null;
  /** The task's skill: its instructions go first, as the system message the model reads before the prompt. */
  skillBody?: string | null | undefined;
}

/** A conversation marked with the task (`schedule_id`), the prompt as its first message; returns its id. */
export async function openScheduledConversation(deps: Pick<Deps, 'db'>, actor: Actor, turn: ScheduledTurn): Promise<string> {
  const conversation = await createConversation(deps, actor, { organization_id: turn.organizationId, title: turn.title }, { scheduleId: turn.scheduleId });
  if (turn.skillBody) await postMessage(deps, actor, conversation.id, { content: turn.skillBody, role: 'system' });
  await postMessage(deps, actor, conversation.id, { content: turn.prompt, role: 'user' });
  return conversation.id;
}

/**
 * Acquires the conversation's run lock and enqueues the chat run (the conversations machinery:
 * hold, stream, capture); `continueWith` is sent when the chat run's job ends, whichever way.
 */
export async function startScheduledTurn(
  deps: Deps,
  actor: Actor,
  conversationId: string,
  turn: Pick<ScheduledTurn, 'model' | 'maxCredits'>,
  continueWith: EnqueueOptions['continueWith'],
): Promise<RunRow> {
  const input = { ...(turn.model && { model: turn.model }), ...(turn.maxCredits && { max_credits: turn.maxCredits }) };
  return startRun(deps, actor, conversationId, input, { continueWith });
}

/**
 * What a scheduled turn holds when it starts: `maxCredits`, else the default hold of its turn — the
 * skill and the prompt at the prices of its model (else the organization's first available one)
 * with the model's `max_tokens` — as ./handlers.ts will compute it for the run.
 */
export async function scheduledTurnCeiling(
  deps: Pick<Deps, 'config' | 'db'>,
  actor: Actor,
  turn: Pick<ScheduledTurn, 'organizationId' | 'prompt' | 'model' | 'maxCredits' | 'skillBody'>,
): Promise<number> {
  if (turn.maxCredits !== null) return turn.maxCredits;
  const model = await chooseModel(deps, actor, turn.organizationId, turn.model ?? undefined);
  const prompt = [...(turn.skillBody ? [{ role: 'system' as const, content: turn.skillBody }] : []), { role: 'user' as const, content: turn.prompt }];
  return defaultTurnCeiling(deps.db, model, turn.organizationId, prompt);
}

export { getRun as currentChatRun, stopRunById as stopChatRun };

/** One turn of a batch: whom it acts as (the task's creator), and what its chat run's end sends. */
export interface ScheduledTurnStart extends ScheduledTurn {
  /** The caller's key for the turn (a scheduled run's id). */
  key: string;
  userId: string;
  continueWith: NonNullable<EnqueueOptions['continueWith']>;
}

export interface OpenedTurn {
  conversationId: string;
  chatRunId: string;
}

/**
 * Many turns at once, in the caller's transaction, in a few statements for the whole batch: each
 * the same as `openScheduledConversation` + `startScheduledTurn` one at a time — its conversation
 * (and activity entry), the skill and the prompt as its messages, its chat run holding the
 * conversation's lock, and the chat run's job (with its continuation), all in one insert per table.
 * The access and model decisions are made once per creator, organization and model. A turn those
 * refuse (the creator no longer a member, the model no longer available) is left out of the map:
 * the caller starts it one at a time, which fails it saying why.
 */
export async function openScheduledTurns(
  trx: Knex.Transaction,
  deps: Pick<Deps, 'config' | 'jobs'>,
  turns: readonly ScheduledTurnStart[],
): Promise<Map<string, OpenedTurn>> {
  const joined = { ...deps, db: trx as unknown as Deps['db'] };
  const actors = new Map<string, Actor>();
  const decisions = new Map<string, Promise<string | null>>();
  const decide = (turn: ScheduledTurnStart) => {
    const key = `${turn.userId}\u0000${turn.organizationId}\u0000${turn.model ?? ''}`;
    let decision = decisions.get(key);
    if (!decision) {
      const asker = actors.get(turn.userId) ?? actorFor(trx, { userId: turn.userId });
      actors.set(turn.userId, asker);
      decision = (async () => {
        if (!(await asker.membership(turn.organizationId))) return null;
        return chooseModel(joined, asker, turn.organizationId, turn.model || undefined).catch((error: unknown) => {
          if (isAppError(error)) return null;
          throw error;
        });
      })();
      decisions.set(key, decision);
    }
    return decision;
  };
  const rows: (ScheduledTurnStart & { chosen: string; conversation_id: string; system_id: string | null; prompt_id: string; run_id: string })[] = [];
  for (const turn of turns) {
    const chosen = await decide(turn);
    if (chosen === null) continue;
    rows.push({
      ...turn,
      chosen,
      conversation_id: randomUUID(),
      system_id: turn.skillBody ? randomUUID() : null,
      prompt_id: randomUUID(),
      run_id: randomUUID(),
    });
  }
  const opened = new Map<string, OpenedTurn>();
  if (rows.length === 0) return opened;
  const records = JSON.stringify(
    rows.map((row) => ({
      conversation_id: row.conversation_id,
      organization_id: row.organizationId,
      user_id: row.userId,
      title: row.title,
      schedule_id: row.scheduleId,
      system_id: row.system_id,
      skill_body: row.skillBody ?? null,
      prompt_id: row.prompt_id,
      prompt: row.prompt,
      run_id: row.run_id,
      model: row.chosen,
      max_credits: row.maxCredits || null,
    })),
  );
  const recordset = `jsonb_to_recordset(?::jsonb) AS x(conversation_id uuid, organization_id text, user_id text, title text, schedule_id uuid, system_id uuid,
                     skill_body text, prompt_id uuid, prompt text, run_id uuid, model text, max_credits integer)`;
  await trx.raw(
    `WITH conversation AS (
       INSERT INTO conversations (id, organization_id, created_by_id, title, visibility, schedule_id)
       SELECT x.conversation_id, x.organization_id, x.user_id, x.title, 'private', x.schedule_id FROM ${recordset}
       RETURNING id, organization_id, created_by_id, title, visibility, project_id
     )
     INSERT INTO activity_events (organization_id, actor_id, action, subject_type, subject_id, data)
     SELECT organization_id, created_by_id, 'conversation.created', 'chat_conversation', id::text,
            jsonb_build_object('title', title, 'visibility', visibility, 'project_id', project_id)
       FROM conversation`,
    [records],
  );
  // The skill's instructions first (the system message the model reads before the prompt), then the prompt under it.
  await trx.raw(
    `INSERT INTO conversation_messages (id, conversation_id, organization_id, parent_id, role, content, created_by_id)
     SELECT m.id, x.conversation_id, x.organization_id, m.parent_id, m.role, m.content, x.user_id
       FROM ${recordset}
      CROSS JOIN LATERAL (VALUES (x.system_id, NULL::uuid, 'system', x.skill_body, 1), (x.prompt_id, x.system_id, 'user', x.prompt, 2)) AS m(id, parent_id, role, content, n)
      WHERE m.id IS NOT NULL
      ORDER BY x.conversation_id, m.n`,
    [records],
  );
  await trx.raw(
    `INSERT INTO chat_runs (id, conversation_id, organization_id, user_id, model, message_id, max_credits)
     SELECT x.run_id, x.conversation_id, x.organization_id, x.user_id, x.model, x.prompt_id, x.max_credits FROM ${recordset}`,
    [records],
  );
  // The prompt is the active leaf, and the chat run holds the conversation's lock.
  await trx.raw(
    `UPDATE conversations c
        SET active_leaf_id = x.prompt_id, last_message_at = m.created_at, message_count = CASE WHEN x.system_id IS NULL THEN 1 ELSE 2 END,
            active_run_id = x.run_id::text, active_run_at = now()
       FROM ${recordset}, conversation_messages m
      WHERE c.id = x.conversation_id AND m.id = x.prompt_id`,
    [records],
  );
  await deps.jobs.enqueueMany(
    trx,
    chatRunJob,
    rows.map((row) => ({ payload: { run_id: row.run_id }, organizationId: row.organizationId, continueWith: row.continueWith })),
  );
  for (const row of rows) opened.set(row.key, { conversationId: row.conversation_id, chatRunId: row.run_id });
  return opened;
}
