import type { Knex } from 'knex';
import { paginate, type Page } from '../core/pagination.ts';
import type { ConsoleCaller } from './access.ts';

/** One operator action, as the append-only `operator_actions` log keeps it (the table refuses UPDATE and DELETE). */
export interface OperatorActionRow {
  id: string;
  at: Date;
  actor_id: string;
  actor_role: string;
  organization_id: string | null;
  action: string;
  target: Record<string, unknown>;
  job_ids: string[];
  bulk_action_id: string | null;
  count: number;
  reason: string | null;
  request_id: string | null;
}

export interface ActionRecord {
  action: string;
  organizationId: string | null;
  target: Record<string, unknown>;
  jobIds?: readonly string[];
  bulkActionId?: string | null;
  count: number;
  reason?: string | null | undefined;
}

/** Appends to the audit log, in the transaction of the action itself: no action without its record. */
export async function recordAction(trx: Knex.Transaction, caller: ConsoleCaller, record: ActionRecord): Promise<void> {
  await trx('operator_actions').insert({
    actor_id: caller.actorId,
    actor_role: caller.role,
    organization_id: record.organizationId,
    action: record.action,
    target: JSON.stringify(record.target),
    job_ids: record.jobIds ?? [],
    bulk_action_id: record.bulkActionId ?? null,
    count: record.count,
    reason: record.reason ?? null,
    request_id: caller.requestId,
  });
}

export async function listActions(
  db: Knex,
  filter: { organizationId: string | null; jobId?: string | undefined; action?: string | undefined; operator: boolean },
  page: { limit: number; cursor?: string | undefined },
): Promise<Page<OperatorActionRow>> {
  const query = db('operator_actions').select('*');
  if (filter.organizationId) query.where({ organization_id: filter.organizationId });
  // Who set or ended an operator's pause, and why, are the operators' (an organization sees the
  // pause itself, with since when, in GET /ops/pauses): those entries stay out of its log.
  if (!filter.operator) query.whereNot((q) => q.where({ actor_role: 'operator' }).whereIn('action', ['pause.create', 'pause.resume']));
  if (filter.action) query.where({ action: filter.action });
  if (filter.jobId) query.where((q) => onJob(q, filter.jobId!));
  return paginate<OperatorActionRow>(
    query,
    [
      { column: 'at', direction: 'desc', type: 'timestamp' },
      { column: 'id', direction: 'desc', type: 'number' },
    ],
    page,
  );
}

/** Actions that named the job, or a bulk action that took it. Newest first. */
export async function actionsOnJob(db: Knex, jobId: string): Promise<OperatorActionRow[]> {
  return (await db('operator_actions')
    .where((q) => onJob(q, jobId))
    .orderBy([
      { column: 'at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(100)) as OperatorActionRow[];
}

function onJob(query: Knex.QueryBuilder, jobId: string) {
  query
    .whereRaw('job_ids @> ARRAY[?]::uuid[]', [jobId])
    .orWhereIn('bulk_action_id', (items) => items.select('bulk_action_id').from('bulk_action_items').where({ job_id: jobId }));
}
