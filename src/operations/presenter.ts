import type { z } from '../core/zod.ts';
import type { RunningAttempt } from '../jobs/boss-sql/index.ts';
import type { JobDefinition } from '../jobs/define.ts';
import { organizationOfJob, unstamp } from '../jobs/origin.ts';
import { asJobErrorRecord } from '../jobs/error-record.ts';
import type { Pause } from '../jobs/pauses.ts';
import type { OperatorActionRow } from './audit.ts';
import type { JobRow } from './job-rows.ts';
import type { organizationPauseSchema, pauseSchema } from './pause-schema.ts';
import type { jobSchema, operatorActionSchema } from './schema.ts';

export const REDACTED = '[redacted]';

const iso = (value: Date | string | null | undefined) => (value === null || value === undefined ? null : new Date(value).toISOString());

/** The payload an answer may show: the job type's sensitive fields redacted (revealing them is its own, audited operation). */
export function visiblePayload(
  payload: Record<string, unknown>,
  definition: JobDefinition | undefined,
): { payload: Record<string, unknown>; redacted: string[] } {
  const redacted = (definition?.sensitive ?? []).filter((field) => field in payload);
  if (redacted.length === 0) return { payload, redacted };
  return { payload: { ...payload, ...Object.fromEntries(redacted.map((field) => [field, REDACTED])) }, redacted };
}

/** pg-boss stores a failure's stack with its message; answers never carry stacks (paths, secrets). */
export function withoutStacks(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutStacks);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== 'stack')
      .map(([key, item]) => [key, withoutStacks(item)]),
  );
}

/**
 * A failed (or retrying) job's output is its last failure: the redacted record the runtime stores,
 * or what pg-boss wrote itself (a timeout) or wrote before records were redacted, redacted now.
 */
function failureOutput(output: unknown): unknown {
  if (output === null || output === undefined) return null;
  const stored = output as { message?: unknown; value?: unknown };
  return asJobErrorRecord(typeof stored.message === 'string' ? stored : (stored.value ?? stored));
}

/** `running`: the job's running attempt as ./running.ts times it (none: not running, or not timed by this answer). */
export function presentJob(row: JobRow, definition: JobDefinition | undefined, running?: RunningAttempt): z.input<typeof jobSchema> {
  const { payload, requestId } = unstamp(row.data ?? {});
  const visible = visiblePayload(payload as Record<string, unknown>, definition);
  return {
    id: row.id,
    queue: row.name,
    state: row.state,
    organization_id: organizationOfJob(row),
    request_id: requestId,
    payload: visible.payload,
    redacted: visible.redacted,
    output: row.state === 'failed' || row.state === 'retry' ? failureOutput(row.output) : withoutStacks(row.output ?? null),
    attempts: row.retry_count + (row.started_on ? 1 : 0),
    retry_limit: row.retry_limit,
    priority: row.priority,
    created_at: iso(row.created_on)!,
    start_after: iso(row.start_after)!,
    started_at: iso(row.started_on),
    completed_at: iso(row.completed_on),
    dead_letter: row.dead_letter,
    source: row.source_name && row.source_id ? { queue: row.source_name, job_id: row.source_id } : null,
    stuck: running?.stuck ?? false,
    running_for_seconds: running ? Math.round(running.running_for_seconds * 10) / 10 : null,
    expected_seconds: running?.expected_seconds ?? null,
  };
}

export function presentAction(row: OperatorActionRow): z.input<typeof operatorActionSchema> {
  return {
    id: String(row.id),
    at: iso(row.at)!,
    actor_id: row.actor_id,
    actor_role: row.actor_role,
    organization_id: row.organization_id,
    action: row.action,
    target: row.target,
    job_ids: row.job_ids,
    bulk_action_id: row.bulk_action_id,
    count: row.count,
    reason: row.reason,
    request_id: row.request_id,
  };
}

/**
 * A pause for a console caller. Operators see who set or ended it and why; an organization's owners
 * and admins see that their work is paused, since when and until when, and who and why only for what
 * their organization did itself — an operator's id and internal reason stay with the operators.
 */
export function presentPause(
  pause: Pause,
  caller: { operator: boolean },
  now = Date.now(),
): z.input<typeof pauseSchema> | z.input<typeof organizationPauseSchema> {
  const common = {
    id: pause.id,
    scope: pause.scope,
    queue: pause.queue,
    organization_id: pause.organization_id,
    schedule: pause.schedule,
    set_by: pause.set_by,
    expires_at: iso(pause.expires_at),
    created_at: iso(pause.created_at)!,
    resumed_at: iso(pause.resumed_at),
    open: pause.resumed_at === null && (pause.expires_at === null || new Date(pause.expires_at).getTime() > now),
    can_resume: caller.operator || pause.set_by === 'organization',
  };
  if (caller.operator) return { ...common, reason: pause.reason, created_by: pause.created_by, resumed_by: pause.resumed_by };
  const own = pause.set_by === 'organization';
  return {
    ...common,
    reason: own ? pause.reason : null,
    created_by: own ? pause.created_by : null,
    resumed_by: pause.resumed_by_operator === false ? pause.resumed_by : null,
  };
}

export { iso };
