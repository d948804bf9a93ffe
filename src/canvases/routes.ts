import { accessRecordRoute } from '../http/access-record-route.ts';
import type { AnyRoute } from '../http/route.ts';
import { resourceRoutes } from '../http/resource-routes.ts';
import { presentCanvas } from './presenter.ts';
import { canvasResource } from './resource.ts';
import { canvasPage, createCanvasBody, listCanvasesQuery, updateCanvasBody } from './schema.ts';
import { createCanvas, deleteCanvas, getCanvas, listCanvases, restoreCanvas, updateCanvas } from './service.ts';

const canvas = resourceRoutes(canvasResource);

export const canvasRoutes: AnyRoute[] = [
  canvas.create({
    path: '/canvases',
    operationId: 'createCanvas',
    summary: 'Create a canvas; the caller owns it',
    description:
      'With `project_id` the canvas is filed into that project (400 on `project_id` when the caller cannot edit the project, or it is deleted or in another organization).',
    body: createCanvasBody,
    run: createCanvas,
  }),
  canvas.list({
    path: '/canvases',
    operationId: 'listCanvases',
    summary: 'Canvases of an organization the caller can read, newest first',
    description: 'Keyset paged. A caller who is not a member of the organization gets an empty page.',
    query: listCanvasesQuery,
    page: canvasPage,
    run: listCanvases,
    presentItem: presentCanvas,
  }),
  canvas.get({ path: '/canvases/{canvas_id}', operationId: 'getCanvas', summary: 'Get a canvas (deleted ones too, with deleted_at set)', run: getCanvas }),
  canvas.update({
    path: '/canvases/{canvas_id}',
    operationId: 'updateCanvas',
    summary: 'Rename a canvas (editors)',
    body: updateCanvasBody,
    run: updateCanvas,
  }),
  canvas.remove({
    path: '/canvases/{canvas_id}',
    operationId: 'deleteCanvas',
    summary: 'Delete a canvas (owners; soft delete, restorable)',
    run: deleteCanvas,
  }),
  canvas.restore({ path: '/canvases/{canvas_id}/restore', operationId: 'restoreCanvas', summary: 'Restore a deleted canvas (owners)', run: restoreCanvas }),
  accessRecordRoute(canvasResource, { path: '/canvases/{canvas_id}/access', operationId: 'getCanvasAccess' }),
];
