import type { Knex } from 'knex';
import { badRequest, conflict, notFound } from '../core/errors.ts';
import { paginate, newestFirst } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import type { Deps } from '../platform/deps.ts';
import type { Actor } from '../access/index.ts';
import { consoleCallerFor, type ConsoleCaller } from './access.ts';
import { recordAction } from './audit.ts';
import { type JobSelection, previewJobRows, snapshotJobRows } from '../jobs/boss-sql/index.ts';
import { windowOf, withinTimeout } from './job-rows.ts';
import { originOf, searchableFields } from './job-service.ts';
import { iso } from './presenter.ts';
import { presentJobs } from './running.ts';
import type { bulkActionSchema, JobFilter } from './schema.ts';
import { bulkActionJob } from './jobs.ts';
import { actionableStates, type BulkActionRow, type BulkKind } from './bulk-model.ts';
import { inTransaction } from '../db/transaction.ts';

/** A bulk action snapshots at most this many jobs; a larger selection is refused (narrow the filter or run several). */
export const BULK_LIMIT = 100_000;

/** The jobs an action would take now: the filter, scoped to the caller, narrowed to the states the action applies to. */
function selection(deps: Deps, caller: ConsoleCaller, action: BulkKind, filter: JobFilter) {
  const scoped = caller.operator ? filter : { ...filter, organization_id: caller.organizationId! };
  if (scoped.state && !actionableStates[action].includes(scoped.state))
    throw badRequest(`filter.state: ${action} applies to ${actionableStates[action].join(', ')} jobs, not ${scoped.state}`, ['filter', 'state']);
  const isDead = (queue: string) => queue.endsWith('.dead');
  if (scoped.queue && action === 'redrive' && !isDead(scoped.queue))
    throw badRequest(`filter.queue: a redrive takes dead letters: name a dead-letter queue (${scoped.queue}.dead)`, ['filter', 'queue']);
  const jobs: JobSelection = {
    ...scoped,
    states: actionableStates[action],
    deadLetters: action === 'redrive' ? 'only' : action === 'delete' ? undefined : 'excluded',
    // The jobs the list shows for the same filter (a redrive names dead-letter queues: every origin).
    queueOrigin: action === 'redrive' ? undefined : originOf(deps, scoped),
  };
  return { jobs, window: windowOf(scoped), searchable: searchableFields(deps), organizationId: scoped.organization_id ?? null };
}

export async function previewBulkAction(deps: Deps, caller: ConsoleCaller, action: BulkKind, filter: JobFilter) {
  return withinTimeout(deps.db, deps.config.OPS_STATEMENT_TIMEOUT_MS, async (trx) => {
    const { jobs, window, searchable } = selection(deps, caller, action, filter);
    const { byQueue, sample } = await previewJobRows(trx, jobs, window, searchable, 10);
    return {
      action,
      count: byQueue.reduce((sum, row) => sum + row.count, 0),
      by_queue: byQueue,
      sample: await presentJobs(trx, deps, sample),
      limit: BULK_LIMIT,
    };
  });
}

/**
 * A durable bulk action: the matching ids are snapshotted now (so jobs arriving later are not swept
 * in), then a job works them in throttled batches. Row, snapshot, job and audit record commit together.
 */
export async function createBulkAction(deps: Deps, caller: ConsoleCaller, action: BulkKind, filter: JobFilter, reason: string) {
  return inTransaction(deps.db, async (trx) => {
    await trx.raw(`SET LOCAL statement_timeout = ${deps.config.OPS_STATEMENT_TIMEOUT_MS * 4}`);
    const { jobs, window, searchable, organizationId } = selection(deps, caller, action, filter);
    const [bulk] = (await trx('bulk_actions')
      .insert({
        action,
        filter: JSON.stringify(filter),
        organization_id: organizationId,
        total: 0,
        reason,
        created_by: caller.actorId,
        request_id: caller.requestId,
      })
      .returning('*')) as BulkActionRow[];
    const total = await snapshotJobRows(trx, jobs, window, searchable, { bulkActionId: bulk!.id, limit: BULK_LIMIT + 1 });
    if (total === 0) throw badRequest(`filter: matches no job a ${action} applies to`, ['filter']);
    if (total > BULK_LIMIT)
      throw badRequest(`filter: matches more than ${BULK_LIMIT} jobs; narrow it (time window, queue, organization) or run several`, ['filter']);
    const [row] = (await trx('bulk_actions').where({ id: bulk!.id }).update({ total }).returning('*')) as BulkActionRow[];
    await deps.jobs.enqueue(trx, bulkActionJob, { bulk_action_id: bulk!.id }, { organizationId: null });
    await recordAction(trx, caller, { action: `bulk.${action}`, organizationId, target: { filter }, bulkActionId: bulk!.id, count: total, reason });
    return row!;
  });
}

/** Asks a running bulk action to stop after its current batch. */
export async function abortBulkAction(deps: Pick<Deps, 'db'>, caller: ConsoleCaller, id: string, reason: string | undefined) {
  return inTransaction(deps.db, async (trx) => {
    const bulk = await visibleBulkAction(trx, caller, id, { forUpdate: true });
    if (bulk.state !== 'running') throw conflict(`the bulk action is already ${bulk.state}`, ['state']);
    const [row] = (await trx('bulk_actions').where({ id }).update({ abort_requested_at: trx.fn.now() }).returning('*')) as BulkActionRow[];
    await recordAction(trx, caller, {
      action: 'bulk.abort',
      organizationId: bulk.organization_id,
      target: { action: bulk.action },
      bulkActionId: id,
      count: bulk.total - bulk.done - bulk.skipped,
      reason,
    });
    return row!;
  });
}

export async function visibleBulkAction(
  db: Knex | Knex.Transaction,
  caller: ConsoleCaller,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<BulkActionRow> {
  const query = db('bulk_actions').where({ id });
  if (options.forUpdate) query.forUpdate();
  const bulk = (await query.first()) as BulkActionRow | undefined;
  if (!bulk || (!caller.operator && bulk.organization_id !== caller.organizationId)) throw notFound('bulk action');
  return bulk;
}

export async function listBulkActions(deps: Pick<Deps, 'db'>, caller: ConsoleCaller, page: { limit: number; cursor?: string | undefined }) {
  const query = deps.db('bulk_actions').select('*');
  if (caller.organizationId) query.where({ organization_id: caller.organizationId });
  const found = await paginate<BulkActionRow>(query, newestFirst(), page);
  return { items: await presentBulkActions(deps.db, found.items), next_cursor: found.next_cursor };
}

export async function presentBulkActions(db: Knex, rows: readonly BulkActionRow[]): Promise<z.input<typeof bulkActionSchema>[]> {
  const reasons = rows.length
    ? ((await db('bulk_action_items')
        .whereIn(
          'bulk_action_id',
          rows.map((row) => row.id),
        )
        .where({ outcome: 'skipped' })
        .select('bulk_action_id', 'skip_reason')
        .count<{ bulk_action_id: string; skip_reason: string; n: string }[]>('* as n')
        .groupBy('bulk_action_id', 'skip_reason')
        .orderBy('n', 'desc')) as { bulk_action_id: string; skip_reason: string; n: string }[])
    : [];
  return rows.map((row) => ({
    id: row.id,
    action: row.action,
    filter: row.filter,
    organization_id: row.organization_id,
    state: row.state,
    total: row.total,
    done: row.done,
    skipped: row.skipped,
    skipped_reasons: reasons.filter((r) => r.bulk_action_id === row.id).map((r) => ({ reason: r.skip_reason, count: Number(r.n) })),
    reason: row.reason,
    created_by: row.created_by,
    created_at: iso(row.created_at)!,
    abort_requested_at: iso(row.abort_requested_at),
    finished_at: iso(row.finished_at),
  }));
}

/** The caller as viewer of the bulk action: operators, or the jobs.manage holders of its organization (404 otherwise, as for a missing one). */
export async function bulkActionCaller(deps: Pick<Deps, 'db'>, actor: Actor, id: string): Promise<ConsoleCaller> {
  const row = (await deps.db('bulk_actions').where({ id }).first('organization_id')) as { organization_id: string | null } | undefined;
  if (!row) throw notFound('bulk action');
  return consoleCallerFor(actor, row.organization_id, 'bulk action');
}
