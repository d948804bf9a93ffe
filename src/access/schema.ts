import { timestamp, userId, uuid, z } from '../core/zod.ts';
import { registeredTypes, type ResourceType } from './registry.ts';

/** Lazy: the names are those registered by the composition root (./registry.ts), read when a request or the document needs them. */
export const resourceTypeSchema = z
  .lazy(() => z.enum(registeredTypes().map((t) => t.type) as [ResourceType, ...ResourceType[]]))
  .openapi({ description: 'Kind of resource (spec 2.1).' });
export const roleSchema = z.enum(['viewer', 'editor', 'owner']);
export const grantRoleSchema = z.enum(['viewer', 'editor']);

/** Spec 2.1, the vocabulary every resource schema shares: how a resource is shared, as stored and shown. */
export const visibilitySchema = z.enum(['private', 'workspace', 'public']);
export const workspaceRoleSchema = roleSchema;
/** What a caller may set: `public` is shown but not writable (it acts like `workspace`). */
export const writableVisibilitySchema = z
  .enum(['private', 'workspace'], { message: 'must be "private" or "workspace" ("public" cannot be set)' })
  .openapi({ description: 'General access: `private` (owner, grants and inherited access) or `workspace` (every member, with `workspace_role`).' });
export const writableWorkspaceRoleSchema = z.enum(['viewer', 'editor'], { message: 'must be "viewer" or "editor"' });

/** The fields every resource shows of its ResourceColumns: who made it in which organization, and its general access (./present.ts). */
export const resourceFields = {
  id: uuid,
  organization_id: z.string(),
  created_by_id: z.string(),
  visibility: visibilitySchema,
  workspace_role: workspaceRoleSchema,
};

/** The fields every soft-deletable record shows of its lifecycle: deleted (when, by whom), created, updated. */
export const lifecycleFields = {
  deleted_at: timestamp.nullable(),
  deleted_by_id: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
};

export const accessParams = z.object({ resource_type: resourceTypeSchema, resource_id: uuid.openapi({ description: 'UUID of the resource.' }) });
export const grantParams = accessParams.extend({ grant_id: uuid.openapi({ description: 'UUID of the grant.' }) });

export const grantSchema = z
  .object({
    id: z.string(),
    user_id: z.string(),
    role: grantRoleSchema,
    granted_by_id: z.string().nullable(),
    created_at: timestamp,
  })
  .openapi('ResourceGrant');

export const inheritedSchema = z
  .object({
    kind: z.enum(['chat', 'canvas', 'project']),
    id: z.string(),
    title: z.string().nullable(),
    emoji: z.string().nullable(),
    via: z.enum(['origin', 'reference']).openapi({
      description:
        '`origin`: the resource was created in it (a chat or canvas that made the asset, the project it was created in); `reference`: it was added or referenced later.',
    }),
    role: roleSchema.openapi({
      description:
        'The role this source passes on: the caller’s when `audience` is true, otherwise what its workspace audience gets. Inherited roles never exceed editor; references pass viewer only.',
    }),
    through: z.enum(['chat', 'canvas']).optional().openapi({ description: 'Set when a project reaches the resource through a chat or canvas it holds.' }),
    audience: z.boolean().openapi({ description: 'Whether the caller is among the people this source reaches.' }),
  })
  .openapi('InheritedAccess');

export const accessRecordSchema = z
  .object({
    resource_type: resourceTypeSchema,
    resource_id: z.string(),
    owner_id: z.string().nullable(),
    role: roleSchema.openapi({
      description:
        'The caller’s effective role: the highest of ownership (creator; organization owners/admins act as owners), a direct grant, general access and inherited access.',
    }),
    shared: z.boolean().openapi({ description: 'General access is not private, or at least one person holds a grant.' }),
    capabilities: z.object({ can_edit: z.boolean(), can_manage_people: z.boolean(), can_change_general_access: z.boolean(), can_delete: z.boolean() }),
    can_leave: z.boolean().openapi({ description: 'The caller holds a direct grant (and does not own the resource), so may delete their own grant.' }),
    general_access: z.object({ visibility: visibilitySchema, workspace_role: grantRoleSchema }),
    general_access_editable: z.boolean(),
    grants: z.array(grantSchema),
    inherited: z.array(inheritedSchema),
  })
  .openapi('AccessRecord');

export const generalAccessBody = z
  .object({
    visibility: writableVisibilitySchema.optional(),
    workspace_role: writableWorkspaceRoleSchema.optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'send at least one of visibility, workspace_role')
  .openapi({ minProperties: 1 })
  .openapi('UpdateGeneralAccess');

export const createGrantBody = z
  .object({ user_id: userId.openapi({ description: 'A member of the resource’s organization.' }), role: grantRoleSchema })
  .strict()
  .openapi('CreateGrant');

export const updateGrantBody = z.object({ role: grantRoleSchema }).strict().openapi('UpdateGrant');
