import { badRequest, conflict, forbidden, notFound } from '../core/errors.ts';
import { paginate, presentPage, newestFirst } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import { createPause, resumePause, type Pause } from '../jobs/pauses.ts';
import { holdsPermissionAnywhere } from '../members/index.ts';
import type { Deps } from '../platform/deps.ts';
import type { Actor } from '../access/index.ts';
import { consoleCallerFor, type ConsoleCaller } from './access.ts';
import { recordAction } from './audit.ts';
import { presentPause } from './presenter.ts';
import type { createPauseBody } from './pause-schema.ts';
import { requireSchedule } from './schedules.ts';
import { inTransaction } from '../db/transaction.ts';

type PauseRequest = z.output<typeof createPauseBody>;

/**
 * Pauses a queue (operators), one organization on a queue (operators, or that organization's
 * owners and admins), or a schedule (operators; an organization's admins for its scheduled tasks).
 * The pause, the deferral of the queued jobs it covers and the audit record commit together.
 */
export async function pause(deps: Deps, caller: ConsoleCaller, request: PauseRequest) {
  const scope = await scopeOf(deps, caller, request);
  const expiresAt = request.expires_at ? new Date(request.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) throw badRequest('expires_at: must be in the future', ['expires_at']);
  return inTransaction(deps.db, async (trx) => {
    const created = await createPause(trx, scope, {
      reason: request.reason,
      expires_at: expiresAt,
      created_by: caller.actorId,
      set_by: caller.operator ? 'operator' : 'organization',
    });
    if (!created) throw conflict(`${describe(scope)} is already paused: resume that pause first (GET /ops/pauses)`, ['scope']);
    await recordAction(trx, caller, {
      action: 'pause.create',
      organizationId: scope.organization_id ?? caller.organizationId,
      target: { pause_id: created.pause.id, ...scope, expires_at: request.expires_at ?? null },
      count: created.deferred,
      reason: request.reason,
    });
    return { pause: presentPause(created.pause, caller), deferred: created.deferred };
  });
}

export async function resume(deps: Pick<Deps, 'db'>, caller: ConsoleCaller, id: string, reason: string | undefined) {
  return inTransaction(deps.db, async (trx) => {
    const existing = (await trx('job_pauses').where({ id }).first()) as Pause | undefined;
    if (!existing || !visible(caller, existing)) throw notFound('pause');
    // An operator's pause (a whole queue, a platform schedule, or the organization by the service)
    // is the operators' to lift; the organization's owners and admins lift only their own.
    if (!caller.operator && existing.set_by === 'operator') throw forbidden('only operators of the service may end a pause an operator set');
    const resumed = await resumePause(trx, id, { id: caller.actorId, operator: caller.operator });
    if (!resumed) throw conflict('the pause already ended', ['resumed_at']);
    await recordAction(trx, caller, {
      action: 'pause.resume',
      organizationId: existing.organization_id ?? caller.organizationId,
      target: { pause_id: id, scope: existing.scope, queue: existing.queue, schedule: existing.schedule },
      count: resumed.restored,
      reason,
    });
    return { pause: presentPause(resumed.pause, caller), restored: resumed.restored };
  });
}

export async function listPauses(deps: Pick<Deps, 'db'>, caller: ConsoleCaller, query: { open: boolean; limit: number; cursor?: string | undefined }) {
  const rows = deps.db('job_pauses').select('*');
  if (query.open) rows.whereNull('resumed_at').where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', deps.db.fn.now()));
  // An organization's work is held by its own pauses and by the service-wide ones (a whole queue).
  if (!caller.operator) rows.where((q) => q.where({ organization_id: caller.organizationId }).orWhere({ scope: 'queue' }));
  const page = await paginate<Pause>(rows, newestFirst(), query);
  return presentPage(page, (p) => presentPause(p, caller));
}

const visible = (caller: ConsoleCaller, pause: Pause) =>
  caller.operator || pause.scope === 'queue' || (pause.organization_id !== null && pause.organization_id === caller.organizationId);

const describe = (scope: Pick<Pause, 'scope' | 'queue' | 'organization_id' | 'schedule'>) =>
  scope.scope === 'queue'
    ? `queue ${scope.queue}`
    : scope.scope === 'organization'
      ? `organization ${scope.organization_id} on ${scope.queue}`
      : `schedule ${scope.schedule}`;

async function scopeOf(deps: Deps, caller: ConsoleCaller, request: PauseRequest): Promise<Pick<Pause, 'scope' | 'queue' | 'organization_id' | 'schedule'>> {
  const requireQueue = async () => {
    if (!request.queue) throw badRequest(`queue: is required to pause a ${request.scope}`, ['queue']);
    const exists = await deps.jobs.commands.queueExists(request.queue);
    if (!exists || request.queue.endsWith('.dead')) throw badRequest(`queue: ${request.queue} is not a queue workers run`, ['queue']);
    return request.queue;
  };
  switch (request.scope) {
    case 'queue':
      if (!caller.operator) throw forbidden('only operators of the service may pause a whole queue (pause your organization on it instead)');
      if (request.organization_id || request.schedule) throw badRequest('scope: a queue pause names only the queue', ['scope']);
      return { scope: 'queue', queue: await requireQueue(), organization_id: null, schedule: null };
    case 'organization': {
      if (!request.organization_id) throw badRequest('organization_id: is required to pause an organization', ['organization_id']);
      if (request.schedule) throw badRequest('schedule: an organization pause names a queue and the organization', ['schedule']);
      return { scope: 'organization', queue: await requireQueue(), organization_id: request.organization_id, schedule: null };
    }
    case 'schedule': {
      if (!request.schedule) throw badRequest('schedule: is required to pause a schedule', ['schedule']);
      if (request.queue) throw badRequest('queue: a schedule pause names only the schedule', ['queue']);
      // organization_id may be given (an admin names their organization to be let in); the schedule decides it.
      const owner = await requireSchedule(deps, request.schedule);
      if (!caller.operator && owner !== caller.organizationId)
        throw forbidden('only operators of the service may pause the platform’s schedules or another organization’s');
      return { scope: 'schedule', queue: null, organization_id: owner, schedule: request.schedule };
    }
  }
}

/**
 * The caller as viewer of the pause: operators, or the jobs.manage holders of its organization (404
 * otherwise, as for a missing one). A service-wide pause (a whole queue) holds every organization's
 * work, so every organization's owners and admins see it; ending it is the operators' (403).
 */
export async function pauseCaller(deps: Pick<Deps, 'db'>, actor: Actor, id: string): Promise<ConsoleCaller> {
  const row = (await deps.db('job_pauses').where({ id }).first('organization_id', 'scope')) as Pick<Pause, 'organization_id' | 'scope'> | undefined;
  if (!row) throw notFound('pause');
  if (row.scope === 'queue' && !actor.operator) {
    if (await holdsPermissionAnywhere(deps.db, actor.userId, 'jobs.manage')) throw forbidden('only operators of the service may end a service-wide pause');
    throw notFound('pause');
  }
  return consoleCallerFor(actor, row.organization_id, 'pause');
}
