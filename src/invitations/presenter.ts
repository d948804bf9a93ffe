import type { Knex } from 'knex';
import type { z } from '../core/zod.ts';
import type { InvitationStatus, invitationSchema } from './schema.ts';
import { iso } from '../core/present.ts';

export interface InvitationRow {
  id: string;
  organization_id: string;
  email: string;
  role: string;
  /** Effective status: a pending invitation past `expires_at` is already `expired` here. */
  status: InvitationStatus;
  invited_by_id: string;
  expires_at: Date;
  accepted_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The effective status in SQL, so lists filter on exactly what readers see. */
export const effectiveStatusSql = (alias = 'i') =>
  `(CASE WHEN ${alias}.status = 'pending' AND ${alias}.expires_at <= now() THEN 'expired' ELSE ${alias}.status END)`;

export const invitationColumns = (db: Knex, alias = 'i') => [
  ...['id', 'organization_id', 'email', 'role', 'invited_by_id', 'expires_at', 'accepted_at', 'created_at', 'updated_at'].map((c) => `${alias}.${c}`),
  db.raw(`${effectiveStatusSql(alias)} as status`),
];

export function presentInvitation(row: InvitationRow): z.input<typeof invitationSchema> {
  return {
    id: row.id,
    organization_id: row.organization_id,
    email: row.email,
    role: row.role,
    status: row.status,
    invited_by_id: row.invited_by_id,
    expires_at: row.expires_at.toISOString(),
    accepted_at: iso(row.accepted_at),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
