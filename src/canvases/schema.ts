import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, queryBoolean, singleLine, userId, uuid, z } from '../core/zod.ts';
import { lifecycleFields, resourceFields, writableVisibilitySchema, writableWorkspaceRoleSchema } from '../access/index.ts';

export const canvasSchema = z
  .object({
    ...resourceFields,
    title: z.string().nullable(),
    project_id: uuid
      .nullable()
      .openapi({ description: 'The project the canvas was created in, if any (GET /canvases/{id}/projects lists every project holding it).' }),
    ...lifecycleFields,
  })
  .openapi('Canvas');

export const canvasPage = pageOf(canvasSchema).openapi('CanvasPage');
export const canvasIdParams = z.object({ canvas_id: uuid.openapi({ description: 'UUID of the canvas.' }) });

const title = singleLine(300).nullable();

export const createCanvasBody = z
  .object({
    organization_id: z.string().min(1).max(64),
    title: title.optional(),
    visibility: writableVisibilitySchema.optional().openapi({ description: 'General access at creation (default `private`).' }),
    workspace_role: writableWorkspaceRoleSchema.optional(),
    project_id: uuid
      .optional()
      .openapi({ description: 'File the canvas into this project (needs the editor role on it).' })
      .openapi({ [CHECKED_BY_SERVER]: true }),
  })
  .strict()
  .openapi('CreateCanvas');

export const updateCanvasBody = z
  .object({ title: title.optional() })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'send at least title')
  .openapi({ minProperties: 1 })
  .openapi('UpdateCanvas', { description: 'General access changes through PATCH /access/canvas/{canvas_id}.' });

export const listCanvasesQuery = z.object({
  organization_id: z.string().min(1).max(64),
  deleted: queryBoolean.optional().openapi({ description: '`true`: only deleted canvases; absent or `false`: only live ones.' }),
  search: z.string().trim().min(1).max(200).optional().openapi({ description: 'Case-insensitive substring of the title.' }),
  created_by: userId.optional(),
  project_id: uuid.optional().openapi({ description: 'Only canvases filed in this project.' }),
  ...pageQuery,
});
