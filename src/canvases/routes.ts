import { accessRecordSchema, getAccessRecord } from '../access/index.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { itemProjectsRoute } from '../projects/item-projects-route.ts';
import { presentCanvas } from './presenter.ts';
import { canvasIdParams, canvasPage, canvasSchema, createCanvasBody, listCanvasesQuery, updateCanvasBody } from './schema.ts';
import { createCanvas, deleteCanvas, getCanvas, listCanvases, restoreCanvas, updateCanvas } from './service.ts';

const tag = 'Canvases';

export const canvasRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/canvases',
    operationId: 'createCanvas',
    summary: 'Create a canvas; the caller owns it',
    description: 'With `project_id` the canvas is filed into that project (400 on `project_id` when the caller cannot edit the project, or it is deleted or in another organization).',
    tag,
    body: createCanvasBody,
    response: { status: 201, description: 'The new canvas', schema: canvasSchema },
    errors: [403, 404],
    handler: async ({ body, caller, deps }) => presentCanvas(await createCanvas(deps, caller, body)),
  }),
  defineRoute({
    method: 'get',
    path: '/canvases',
    operationId: 'listCanvases',
    summary: 'Canvases of an organization the caller can read, newest first',
    description: 'Keyset paged. A caller who is not a member of the organization gets an empty page.',
    tag,
    query: listCanvasesQuery,
    response: { status: 200, description: 'A page of canvases', schema: canvasPage },
    handler: async ({ query, caller, deps }) => {
      const page = await listCanvases(deps, caller, query);
      return { items: page.items.map(presentCanvas), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/canvases/{canvas_id}',
    operationId: 'getCanvas',
    summary: 'Get a canvas (deleted ones too, with deleted_at set)',
    tag,
    params: canvasIdParams,
    response: { status: 200, description: 'The canvas', schema: canvasSchema },
    errors: [404],
    handler: async ({ params, caller, deps }) => presentCanvas(await getCanvas(deps, caller, params.canvas_id)),
  }),
  defineRoute({
    method: 'patch',
    path: '/canvases/{canvas_id}',
    operationId: 'updateCanvas',
    summary: 'Rename a canvas (editors)',
    tag,
    params: canvasIdParams,
    body: updateCanvasBody,
    response: { status: 200, description: 'The updated canvas', schema: canvasSchema },
    errors: [403, 404, 409],
    handler: async ({ params, body, caller, deps }) => presentCanvas(await updateCanvas(deps, caller, params.canvas_id, body)),
  }),
  defineRoute({
    method: 'delete',
    path: '/canvases/{canvas_id}',
    operationId: 'deleteCanvas',
    summary: 'Delete a canvas (owners; soft delete, restorable)',
    tag,
    params: canvasIdParams,
    response: { status: 204, description: 'Deleted' },
    errors: [403, 404],
    handler: async ({ params, caller, deps }) => deleteCanvas(deps, caller, params.canvas_id),
  }),
  defineRoute({
    method: 'post',
    path: '/canvases/{canvas_id}/restore',
    operationId: 'restoreCanvas',
    summary: 'Restore a deleted canvas (owners)',
    tag,
    params: canvasIdParams,
    response: { status: 200, description: 'The restored canvas', schema: canvasSchema },
    errors: [403, 404],
    handler: async ({ params, caller, deps }) => presentCanvas(await restoreCanvas(deps, caller, params.canvas_id)),
  }),
  itemProjectsRoute({ type: 'canvas', collection: 'canvases', idParam: 'canvas_id', noun: 'canvas', operationId: 'listCanvasProjects', tag }),
  defineRoute({
    method: 'get',
    path: '/canvases/{canvas_id}/access',
    operationId: 'getCanvasAccess',
    summary: 'The canvas’s access record (same as GET /access/canvas/{canvas_id})',
    tag,
    params: canvasIdParams,
    response: { status: 200, description: 'The access record (spec 2.7)', schema: accessRecordSchema },
    errors: [404],
    handler: async ({ params, caller, deps }) => getAccessRecord(deps, caller, 'canvas', params.canvas_id),
  }),
];
