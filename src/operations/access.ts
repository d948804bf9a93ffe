import type { Knex } from 'knex';
import type { Actor } from '../access/index.ts';
import { isAppError, notFound } from '../core/errors.ts';
import { membershipsWithRolesOfUser, roleHoldsSql } from '../members/index.ts';
import { workContext } from '../platform/work-context.ts';

/**
 * Who is using the console, as the audit log records them: an operator of the service (every
 * organization), or an owner or admin (`jobs.manage`) acting in one organization. The route's
 * `jobConsole()` authorization has already refused anyone else.
 */
export interface ConsoleCaller {
  actorId: string;
  /** `operator`, or the caller's role in `organizationId`. */
  role: string;
  operator: boolean;
  /** The organization the caller named (always set for a non-operator). */
  organizationId: string | null;
  requestId: string | null;
}

export async function consoleCaller(actor: Actor, organizationId: string | undefined): Promise<ConsoleCaller> {
  const requestId = workContext().request_id ?? null;
  if (actor.operator) return { actorId: actor.userId, role: 'operator', operator: true, organizationId: organizationId ?? null, requestId };
  const membership = await actor.within(organizationId!, 'jobs.manage');
  return { actorId: actor.userId, role: membership.role, operator: false, organizationId: organizationId!, requestId };
}

/**
 * The caller for one job: operators see every job; anyone else only jobs of an organization where
 * they hold `jobs.manage` — any other job, like a missing one, is 404.
 */
export async function consoleCallerFor(actor: Actor, jobOrganizationId: string | null, what = 'job'): Promise<ConsoleCaller> {
  if (actor.operator) return consoleCaller(actor, jobOrganizationId ?? undefined);
  if (!jobOrganizationId) throw notFound(what);
  return consoleCaller(actor, jobOrganizationId).catch((error: unknown) => {
    throw isAppError(error) ? notFound(what) : error;
  });
}

/**
 * Where the console may take its caller: an operator sees every organization; anyone else the live
 * organizations where they hold `jobs.manage` (an owner's or admin's own view), oldest membership
 * first. The page lands a tenant admin on the first of these instead of on a cross-organization
 * view they may not read.
 */
export async function consoleIdentity(db: Knex, actor: Actor) {
  const organizations = (await membershipsWithRolesOfUser(db, actor.userId)
    .whereRaw(roleHoldsSql('jobs.manage'))
    .orderBy([
      { column: 'm.created_at', order: 'asc' },
      { column: 'o.id', order: 'asc' },
    ])
    .limit(100)
    .select('o.id', 'o.name', 'm.role')) as { id: string; name: string; role: string }[];
  return { user_id: actor.userId, operator: actor.operator, organizations };
}
