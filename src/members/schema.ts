import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, jsonValue, singleLine, TIME_ZONES, timestamp, userId, z } from '../core/zod.ts';

/** A role key (`owner`, `admin`, `member` or a custom role's). */
export const roleKey = z
  .string()
  .min(1)
  .max(40)
  .regex(/^[a-z][a-z0-9_-]*$/, 'must start with a lowercase letter and contain only lowercase letters, digits, "_" and "-"')
  .openapi({ example: 'editor-in-chief' });

export const memberParams = z.object({
  organization_id: z.string().min(1).max(64),
  user_id: userId,
});

export const memberSchema = z
  .object({
    user_id: z.string(),
    email: z.string().nullable(),
    name: z.string().nullable(),
    role: z.string().openapi({ description: 'A built-in role (`owner`, `admin`, `member`) or the key of a custom role.' }),
    joined_at: timestamp,
    updated_at: timestamp.openapi({ description: 'Last change of the membership (its role).' }),
  })
  .openapi('Member');

export const memberEnvelope = z.object({ member: memberSchema });
export const memberPage = pageOf(memberSchema).openapi('MemberPage');

export const listMembersQuery = z.object({
  ...pageQuery,
  role: roleKey.optional().openapi({ description: 'Only members holding this role.' }),
  search: z.string().trim().min(1).max(200).optional().openapi({ description: 'Case-insensitive substring of the name or e-mail.' }),
});

export const changeMemberRoleBody = z
  .object({
    role: roleKey.openapi({
      description: 'A built-in role or a custom role of the organization (400 naming it when the organization has no such role).',
      [CHECKED_BY_SERVER]: true,
    }),
  })
  .strict()
  .openapi('ChangeMemberRole');

const shortText = (max: number) => singleLine(max).nullable().optional();

const MAX_PREFERENCES_BYTES = 16 * 1024;

const timezone = z
  .string()
  .max(64)
  .refine((zone) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: zone });
      return true;
    } catch {
      return false;
    }
  }, 'must be an IANA time zone such as "Europe/Paris"')
  .openapi({ enum: [...TIME_ZONES] })
  .nullable()
  .optional();

export const personalizationSchema = z
  .object({
    user_id: z.string(),
    display_name: z.string().nullable(),
    job_title: z.string().nullable(),
    timezone: z.string().nullable(),
    preferences: z.record(z.string(), jsonValue),
    updated_at: timestamp.nullable().openapi({ description: 'null until the member first saves something.' }),
  })
  .openapi('MemberPersonalization', { description: 'Settings a member keeps for themself in one organization; only they can read or change them.' });

export const personalizationEnvelope = z.object({ personalization: personalizationSchema });

export const updatePersonalizationBody = z
  .object({
    display_name: shortText(80).openapi({ description: 'Name shown in this organization; null clears it.' }),
    job_title: shortText(120),
    timezone: timezone.openapi({ description: 'IANA time zone; null clears it.' }),
    preferences: z
      .record(z.string(), jsonValue)
      .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= MAX_PREFERENCES_BYTES, `must be at most ${MAX_PREFERENCES_BYTES / 1024} KiB of JSON`)
      .optional()
      .openapi({ description: 'A JSON object kept as sent; it replaces the stored one.' }),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'send at least one of display_name, job_title, timezone, preferences')
  .openapi({ minProperties: 1 })
  .openapi('UpdateMemberPersonalization');
