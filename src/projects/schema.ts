import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, jsonValue, queryBoolean, singleLine, timestamp, userId, uuid, z } from '../core/zod.ts';
import { lifecycleFields, resourceFields, writableVisibilitySchema, writableWorkspaceRoleSchema } from '../access/index.ts';
import { chatToolNames } from '../conversations/index.ts';

export const projectSlugSchema = z
  .string()
  .min(1)
  .max(80)
  .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be lowercase letters and digits, words joined by single hyphens')
  .openapi({ example: 'spring-launch' });

export const projectSchema = z
  .object({
    ...resourceFields,
    slug: z.string(),
    title: z.string(),
    emoji: z.string().nullable(),
    description: z.string().nullable(),
    knowledge_skill_id: uuid.nullable(),
    chat_tools: z.array(z.string()).nullable().openapi({
      description:
        'The tools chat turns of the project’s conversations may offer (with the run’s and the conversation’s `tools`: a turn offers what all of them allow); null: no narrowing.',
    }),
    mod_source_id: z.string().nullable(),
    metadata: jsonValue.nullable(),
    archived_at: timestamp.nullable(),
    archived_by_id: z.string().nullable(),
    ...lifecycleFields,
  })
  .openapi('Project');

export const projectPage = pageOf(projectSchema).openapi('ProjectPage');
export const projectIdParams = z.object({ project_id: uuid.openapi({ description: 'UUID of the project.' }) });

const title = singleLine(200);
const emoji = singleLine(16).nullable();
const description = z.string().max(5000).nullable();

export const createProjectBody = z
  .object({
    organization_id: z.string().min(1).max(64),
    title,
    slug: projectSlugSchema.optional().openapi({ description: 'Unique in the organization; derived from the title when absent.' }),
    emoji: emoji.optional(),
    description: description.optional(),
    visibility: writableVisibilitySchema.optional().openapi({ description: 'General access at creation (default `private`).' }),
    workspace_role: writableWorkspaceRoleSchema
      .optional()
      .openapi({ description: 'Role of organization members when visibility is `workspace` (default `viewer`).' }),
    metadata: jsonValue.nullable().optional(),
  })
  .strict()
  .openapi('CreateProject');

export const updateProjectBody = z
  .object({
    title: title.optional(),
    slug: projectSlugSchema.optional(),
    emoji: emoji.optional(),
    description: description.optional(),
    metadata: jsonValue.nullable().optional(),
    knowledge_skill_id: uuid
      .nullable()
      .optional()
      .openapi({
        description:
          'A live skill of the project’s organization that the caller can read (else 400): its body becomes the system context of every chat turn in the project’s conversations — for each turn’s user who can read it. null clears it.',
      })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    chat_tools: chatToolNames
      .nullable()
      .optional()
      .openapi({
        description:
          'Narrow the tools chat turns of the project’s conversations may offer to these names (`[]`: none), each a built-in tool or `<namespace>__<tool>` of an MCP connector of the organization you can use (else 400 naming the entry). null: no narrowing.',
      })
      .openapi({ [CHECKED_BY_SERVER]: true }),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'send at least one of title, slug, emoji, description, metadata, knowledge_skill_id, chat_tools')
  .openapi({ minProperties: 1 })
  .openapi('UpdateProject', { description: 'General access (visibility, workspace_role) changes through PATCH /access/project/{project_id}.' });

export const listProjectsQuery = z.object({
  organization_id: z.string().min(1).max(64),
  archived: queryBoolean.optional().openapi({ description: '`true`: only archived projects; absent or `false`: only unarchived ones.' }),
  deleted: queryBoolean.optional().openapi({ description: '`true`: only deleted projects (the trash); absent or `false`: only live ones.' }),
  search: z.string().trim().min(1).max(200).optional().openapi({ description: 'Case-insensitive substring of the title or slug.' }),
  created_by: userId.optional().openapi({ description: 'Only projects created by this user id.' }),
  ...pageQuery,
});

export const accountsQuery = z.object({ ...pageQuery });
export const projectAccountSchema = z
  .object({
    organization_id: z.string(),
    name: z.string(),
    slug: z.string(),
    role: z.string().openapi({ description: 'The caller’s organization role.' }),
    can_create_projects: z.boolean().openapi({ description: 'The role holds `resources.create`.' }),
    project_count: z.number().int().openapi({ description: 'Live, unarchived projects the caller can read there.' }),
    archived_project_count: z.number().int().openapi({ description: 'Live, archived projects the caller can read there.' }),
  })
  .openapi('ProjectAccount');
export const projectAccountPage = pageOf(projectAccountSchema).openapi('ProjectAccountPage');
