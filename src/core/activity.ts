import type { Knex } from 'knex';

export interface ActivityEntry {
  organizationId: string;
  actorId: string | null;
  /** Past-tense verb in the product's words: `organization.created`, `member.removed`… */
  action: string;
  subjectType: string;
  subjectId: string | null;
  data?: Record<string, unknown>;
}

/**
 * Appends to the activity feed. Call it with the transaction of the change it records. Every
 * domain records its changes (CONVENTIONS §5), so the writer sits in the shared kernel; the
 * activity domain (src/activity) reads the feed back.
 */
export async function recordActivity(trx: Knex.Transaction, entry: ActivityEntry): Promise<void> {
  await trx('activity_events').insert({
    organization_id: entry.organizationId,
    actor_id: entry.actorId,
    action: entry.action,
    subject_type: entry.subjectType,
    subject_id: entry.subjectId,
    data: entry.data ?? {},
  });
}
