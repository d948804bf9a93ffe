import type { z } from '../core/zod.ts';
import type { memberSchema, personalizationSchema } from './schema.ts';

export interface MemberRow {
  user_id: string;
  email: string | null;
  name: string | null;
  role: string;
  joined_at: Date;
  updated_at: Date;
}

export const memberColumns = ['m.user_id', 'u.email', 'u.name', 'm.role', 'm.created_at as joined_at', 'm.updated_at'];

export function presentMember(row: MemberRow): z.input<typeof memberSchema> {
  return {
    user_id: row.user_id,
    email: row.email,
    name: row.name,
    role: row.role,
    joined_at: row.joined_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export interface Personalization {
  userId: string;
  displayName: string | null;
  jobTitle: string | null;
  timezone: string | null;
  preferences: Record<string, unknown>;
  updatedAt: Date | null;
}

export function presentPersonalization(p: Personalization): z.input<typeof personalizationSchema> {
  return {
    user_id: p.userId,
    display_name: p.displayName,
    job_title: p.jobTitle,
    timezone: p.timezone,
    preferences: p.preferences,
    updated_at: p.updatedAt?.toISOString() ?? null,
  };
}
