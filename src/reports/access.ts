import type { Knex } from 'knex';
import { forbidden } from '../core/errors.ts';
import { requireMember } from '../organizations/membership.ts';

/** Reports show money and usage: members only (404 otherwise) holding credits.view or billing.view (403). */
export async function requireReportAccess(db: Knex, organizationId: string, userId: string): Promise<void> {
  const membership = await requireMember(db, organizationId, userId);
  if (!membership.permissions.has('credits.view') && !membership.permissions.has('billing.view')) {
    throw forbidden(`your role "${membership.role}" lacks the permission credits.view or billing.view`);
  }
}
