import { workContext } from '../platform/work-context.ts';

/**
 * Where a job came from, stored on the pg-boss row itself (no second row per job): the
 * organization as pg-boss's group id — a first-class, indexed column whose per-group concurrency
 * gives each organization a fair share — and the enqueuing request id under a reserved payload
 * key. Reserved keys start with `$`, which no payload schema uses; they are split off before the
 * payload is validated.
 */
export interface JobOrigin {
  /** The organization the job works for; `null` for the platform's own jobs (maintenance, dispatch). */
  organizationId: string | null;
  requestId: string | null;
  /** Set when an operator sent the job by hand ("trigger now"), so a paused schedule still runs it. */
  triggeredBy?: string | null;
}

export const REQUEST_ID_KEY = '$request_id';
export const TRIGGERED_BY_KEY = '$triggered_by';
export const THEN_KEY = '$then';
/** The organization of a job whose pg-boss group is something else (a webhook delivery is grouped by its endpoint). */
export const ORGANIZATION_KEY = '$organization_id';

/**
 * A job to send when this one ends, whichever way (succeeded, failed for good, canceled): the
 * runtime enqueues it in the transaction that ends this job, so a job never waits on another — it
 * ends, and the other's end continues the work.
 */
export interface Continuation {
  queue: string;
  payload: object;
}

/** The payload as stored: the validated payload and the origin's reserved keys. */
export function stamp(
  payload: object,
  origin: Pick<JobOrigin, 'requestId' | 'triggeredBy'> & { continueWith?: Continuation | undefined; groupedElsewhere?: string | null | undefined },
): object {
  const stored: Record<string, unknown> = { ...payload };
  if (origin.groupedElsewhere) stored[ORGANIZATION_KEY] = origin.groupedElsewhere;
  if (origin.requestId) stored[REQUEST_ID_KEY] = origin.requestId;
  if (origin.triggeredBy) stored[TRIGGERED_BY_KEY] = origin.triggeredBy;
  if (origin.continueWith) stored[THEN_KEY] = origin.continueWith;
  return stored;
}

/** The continuation stored with a job, if any. */
export function continuationOf(data: unknown): Continuation | null {
  const then = (data as Record<string, unknown> | null)?.[THEN_KEY] as Partial<Continuation> | undefined;
  return typeof then?.queue === 'string' && typeof then.payload === 'object' && then.payload !== null ? (then as Continuation) : null;
}

/** The organization stamped on a job grouped by something else; null when its group is its organization. */
export function stampedOrganization(data: unknown): string | null {
  const value = (data as Record<string, unknown> | null)?.[ORGANIZATION_KEY];
  return typeof value === 'string' ? value : null;
}

/** The organization a job works for: the one stamped on it when its group is something else (a webhook delivery's endpoint), else its group. */
export const organizationOfJob = (job: { group_id: string | null; data: unknown }): string | null => stampedOrganization(job.data) ?? job.group_id;

const column = (alias: string | undefined, name: string) => (alias ? `${alias}.${name}` : name);

/** SQL: the organization of the job row aliased `alias`, as organizationOfJob. */
export const organizationOfJobSql = (alias?: string) => `coalesce(${column(alias, 'data')} ->> '${ORGANIZATION_KEY}', ${column(alias, 'group_id')})`;

/**
 * SQL condition, two bindings (the organization twice): the job row aliased `alias` works for the
 * organization. Each branch has its index: the group's (job_ops_group_created_i), the stamped key's
 * (job_ops_organization_created_i), so a tenant's filter finds its webhook deliveries too — and not
 * the jobs of an "organization" that is someone's endpoint id.
 */
export const jobOfOrganizationSql = (alias?: string) => {
  const data = column(alias, 'data');
  return `((${column(alias, 'group_id')} = ? AND NOT ${data} \\? '${ORGANIZATION_KEY}') OR (${data} \\? '${ORGANIZATION_KEY}' AND ${data} ->> '${ORGANIZATION_KEY}' = ?))`;
};

/** The request id of the work in progress: a request's, or — inside a job — the one that enqueued it. */
export const currentRequestId = (): string | null => workContext().request_id ?? null;

/** Splits a stored payload into the handler's payload and the origin's reserved keys. */
export function unstamp(data: unknown): { payload: unknown; requestId: string | null; triggeredBy: string | null } {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return { payload: data, requestId: null, triggeredBy: null };
  const payload: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) if (!key.startsWith('$')) payload[key] = value;
  const record = data as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  return { payload, requestId: text(record[REQUEST_ID_KEY]), triggeredBy: text(record[TRIGGERED_BY_KEY]) };
}
