import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, jsonValue, queryBoolean, singleLine, timestamp, uuid, z } from '../core/zod.ts';
import { lifecycleFields, visibilitySchema, workspaceRoleSchema } from '../access/index.ts';

export const skillIdParams = z.object({ skill_id: uuid.openapi({ description: 'Skill id (UUID).' }) });
export const skillVersionParams = skillIdParams.extend({ version_id: uuid.openapi({ description: 'Skill version id (UUID).' }) });

/** Spec 2.5, every field always present. */
export const skillSchema = z
  .object({
    id: uuid,
    codename: z.string().nullable(),
    organization_id: z.string().nullable(),
    source: z.enum(['built-in', 'custom', 'community']),
    name: z.string(),
    description: z.string(),
    body: z.string(),
    files: jsonValue.nullable(),
    author: z.string().nullable(),
    project_scoped: z.boolean().openapi({ description: 'True when the skill was created inside a project.' }),
    visibility: visibilitySchema,
    workspace_role: workspaceRoleSchema,
    created_by_id: z.string().nullable(),
    mod_shortcut_id: z.string().nullable(),
    listing_id: uuid.nullable(),
    listing_version: z.number().int().nullable(),
    listing_edited_at: timestamp.nullable(),
    ...lifecycleFields,
  })
  .strict()
  .openapi('Skill');

export const skillEnvelope = z.object({ skill: skillSchema }).strict().openapi('SkillEnvelope');

/** Spec 2.5, organization-scoped shape (POST /organizations/{organization_id}/skills). */
export const organizationSkillSchema = z
  .object({ id: z.string() }) // a string there, not a uuid (spec 2.5)
  .extend(
    skillSchema.pick({
      organization_id: true,
      source: true,
      name: true,
      description: true,
      body: true,
      files: true,
      author: true,
      project_scoped: true,
      created_by_id: true,
      mod_shortcut_id: true,
      deleted_at: true,
      deleted_by_id: true,
      created_at: true,
      updated_at: true,
    }).shape,
  )
  .strict()
  .openapi('OrganizationSkill');

export const organizationSkillEnvelope = z.object({ skill: organizationSkillSchema }).strict().openapi('OrganizationSkillEnvelope');

const name = singleLine(120);
const description = z.string().max(2000);
const body = z.string().max(200_000);
const files = jsonValue
  .nullable()
  .refine((value) => JSON.stringify(value).length <= 1_000_000, 'must be at most 1 MB as JSON')
  .openapi({ description: 'Any JSON, e.g. `[{"path": "...", "content": "..."}]`; at most 1 MB serialised.' });

export const createSkillBody = z
  .object({
    organization_id: z.string().min(1).max(64),
    name,
    description,
    body,
    files: files.optional(),
    project_id: uuid
      .optional()
      .openapi({ description: 'Create the skill inside this project (the caller must be able to edit it); makes it `project_scoped`.' })
      .openapi({ [CHECKED_BY_SERVER]: true }),
  })
  .strict()
  .openapi('CreateSkill');

export const createOrganizationSkillBody = z.object({ name, description, body, files: files.optional() }).strict().openapi('CreateOrganizationSkill', {
  description: '`name` (1–120 characters, unique among the organization’s live skills), `description` and `body` are required; `files` is optional.',
});

export const updateSkillBody = z
  .object({ name: name.optional(), description: description.optional(), body: body.optional(), files: files.optional() })
  .strict()
  .refine((value) => Object.keys(value).length > 0, 'send at least one of: name, description, body, files')
  .openapi({ minProperties: 1 })
  .openapi('UpdateSkill', { description: 'Sparse; every accepted change makes a new version.' });

export const listSkillsQuery = z.object({
  organization_id: z.string().min(1).max(64).openapi({ description: 'Organization whose skills to list (the caller must be a member).' }),
  deleted: queryBoolean.default(false).openapi({ description: '`true` lists only soft-deleted skills; default lists only live ones.' }),
  search: z.string().trim().min(1).max(200).optional().openapi({ description: 'Case-insensitive substring of the name.' }),
  ...pageQuery,
});

export const skillPage = pageOf(skillSchema).openapi('SkillPage');

export const skillVersionSchema = z
  .object({
    id: uuid,
    skill_id: uuid,
    version: z.number().int().openapi({ description: 'Starts at 1, one more for every change.' }),
    name: z.string(),
    description: z.string(),
    body: z.string(),
    files: jsonValue.nullable(),
    restored_from_version: z.number().int().nullable().openapi({ description: 'The version this one copies, when it was made by a restore.' }),
    current: z.boolean().openapi({ description: 'True for the version the skill shows now.' }),
    created_by_id: z.string().nullable(),
    created_at: timestamp,
  })
  .strict()
  .openapi('SkillVersion');

export const skillVersionEnvelope = z.object({ version: skillVersionSchema }).strict().openapi('SkillVersionEnvelope');
export const skillVersionPage = pageOf(skillVersionSchema).openapi('SkillVersionPage');
export const skillVersionsQuery = z.object({ ...pageQuery });
