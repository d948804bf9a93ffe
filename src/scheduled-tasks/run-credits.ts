// Who pays for a scheduled task's run, how much it holds, and who may raise that.
import { type Actor, actorFor, type Role } from '../access/index.ts';
import { scheduledTurnCeiling } from '../conversations/index.ts';
import { forbidden, isAppError } from '../core/errors.ts';
import { requireHoldable } from '../credits/index.ts';
import type { Deps } from '../platform/deps.ts';
import type { ScheduledTaskRow } from './presenter.ts';
import type { TaskRunRow } from './runs.ts';

/**
 * The member a run acts as and charges (their access and spending limit apply): whoever triggered
 * it — a manual or one-off run — else the task's creator (its scheduled slots, and the job console's
 * "trigger now", which nobody in particular asked for).
 */
export const payerOf = (run: Pick<TaskRunRow, 'trigger' | 'requested_by_id'>, task: Pick<ScheduledTaskRow, 'created_by_id'>): string =>
  run.trigger !== 'schedule' && run.requested_by_id !== null ? run.requested_by_id : task.created_by_id;

/** The task's skill as `actor` can read it now; null when it has none or they cannot (the run would fail, saying so). */
async function skillBodyFor(deps: Pick<Deps, 'db'>, actor: Actor, skillId: string | null): Promise<string | null> {
  if (!skillId) return null;
  try {
    return (await actor.resource<{ body: string }>(deps.db, 'skill', skillId, 'read')).row.body;
  } catch (error) {
    if (isAppError(error)) return null;
    throw error;
  }
}

/** What one run of the task (with these settings) holds when it starts: `max_credits_per_run`, else the default hold of its turn. */
export async function runCeiling(
  deps: Pick<Deps, 'config' | 'db'>,
  payer: Actor,
  task: Pick<ScheduledTaskRow, 'organization_id' | 'skill_id'>,
  settings: { prompt: string; model: string | null; maxCredits: number | null },
): Promise<number> {
  if (settings.maxCredits !== null) return settings.maxCredits;
  return scheduledTurnCeiling(deps, payer, {
    organizationId: task.organization_id,
    prompt: settings.prompt,
    model: settings.model,
    maxCredits: null,
    skillBody: await skillBodyFor(deps, payer, task.skill_id),
  });
}

/**
 * 402 `payment_required` (naming `spending_limit` or `balance`) when the payer could not hold the
 * run's credits now. A precheck: the hold placed when the run starts decides, and a run whose
 * credits went elsewhere meanwhile is `skipped`.
 */
export async function requireRunCovered(
  deps: Pick<Deps, 'config' | 'creditPeriods' | 'db'>,
  payer: Actor,
  task: ScheduledTaskRow,
  settings: { prompt: string; model: string | null },
): Promise<void> {
  const amount = await runCeiling(deps, payer, task, { ...settings, maxCredits: task.max_credits_per_run });
  await requireHoldable(deps.db, deps.creditPeriods, { organizationId: task.organization_id, userId: payer.userId, amount, reason: 'chat_run' });
}

/**
 * Raising `max_credits_per_run` above its effective value (null: the default hold, as a scheduled
 * slot would hold it for the creator) spends the creator's credits on every slot: the task's owner
 * or an organization owner/admin may (resource role `owner`), an editor gets 403. Lowering is free.
 */
export async function requireCapAuthority(
  deps: Pick<Deps, 'config' | 'db'>,
  role: Role,
  before: ScheduledTaskRow,
  after: { prompt: string; model: string | null; maxCredits: number | null },
): Promise<void> {
  if (role === 'owner') return;
  if (before.max_credits_per_run !== null && after.maxCredits !== null && after.maxCredits <= before.max_credits_per_run) return;
  const creator = actorFor(deps.db, { userId: before.created_by_id });
  const current = await runCeiling(deps, creator, before, { prompt: before.prompt, model: before.model, maxCredits: before.max_credits_per_run });
  const next = await runCeiling(deps, creator, before, after);
  if (next > current)
    throw forbidden(
      `max_credits_per_run: raising what each run may hold from ${current} to ${next} credits needs the task’s owner or an organization admin; your role on it is "${role}"`,
    );
}
