// The job console's bulk actions: preview, start, list, read and abort a durable bulk action.
import { z } from '../core/zod.ts';
import { operatorOrRecordMember } from '../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { consoleRoute } from './console-route.ts';
import {
  abortBulkAction,
  bulkActionCaller,
  createBulkAction,
  listBulkActions,
  presentBulkActions,
  previewBulkAction,
  visibleBulkAction,
} from './bulk-actions.ts';
import {
  bulkActionIdParams,
  bulkActionPage,
  bulkActionSchema,
  bulkPreviewSchema,
  bulkRequest,
  createBulkActionBody,
  listBulkActionsQuery,
  reasonBody,
} from './schema.ts';

const tag = 'Operations';
const bulkEnvelope = z.object({ bulk_action: bulkActionSchema });

export const bulkActionRoutes: AnyRoute[] = [
  consoleRoute('body.filter', {
    method: 'post',
    path: '/ops/bulk-actions/preview',
    operationId: 'previewBulkAction',
    summary: 'How many jobs a bulk retry, cancel or redrive would take now, by queue, with a sample',
    description: 'Nothing changes. Dead letters: `action: redrive` with `filter.queue` naming a dead-letter queue (or none: every dead-letter queue).',
    body: bulkRequest,
    response: { status: 200, description: 'The preview', schema: bulkPreviewSchema },
    errors: [503],
    handler: ({ deps, caller, body }) => previewBulkAction(deps, caller, body.action, body.filter),
  }),
  consoleRoute('body.filter', {
    method: 'post',
    path: '/ops/bulk-actions',
    operationId: 'createBulkAction',
    idempotent: {},
    summary: 'Start a durable bulk retry, cancel or redrive',
    description:
      'The matching ids are snapshotted now (at most 100,000; jobs arriving later are not swept in), then a job works them in throttled batches (`OPS_BULK_BATCH_SIZE`, `OPS_BULK_PAUSE_MS`); follow `GET /ops/bulk-actions/{id}` for progress and what was skipped, and why. 400 when the filter matches nothing.',
    body: createBulkActionBody,
    response: { status: 202, description: 'The bulk action, running', schema: bulkEnvelope },
    handler: async ({ deps, caller, body }) => {
      const row = await createBulkAction(deps, caller, body.action, body.filter, body.reason);
      return { bulk_action: (await presentBulkActions(deps.db, [row]))[0]! };
    },
  }),
  consoleRoute('query', {
    method: 'get',
    path: '/ops/bulk-actions',
    operationId: 'listBulkActions',
    summary: 'Bulk actions, newest first',
    query: listBulkActionsQuery,
    response: { status: 200, description: 'A page of bulk actions', schema: bulkActionPage },
    handler: ({ deps, caller, query }) => listBulkActions(deps, caller, query),
  }),
  defineRoute({
    method: 'get',
    path: '/ops/bulk-actions/{bulk_action_id}',
    operationId: 'getBulkAction',
    tag,
    summary: 'A bulk action’s progress: done, skipped (with reasons), state',
    params: bulkActionIdParams,
    authorize: operatorOrRecordMember('bulk_action', 'jobs.manage'),
    response: { status: 200, description: 'The bulk action', schema: bulkEnvelope },
    errors: [404],
    handler: async ({ deps, actor, params }) => {
      const caller = await bulkActionCaller(deps, actor, params.bulk_action_id);
      return { bulk_action: (await presentBulkActions(deps.db, [await visibleBulkAction(deps.db, caller, params.bulk_action_id)]))[0]! };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/ops/bulk-actions/{bulk_action_id}/abort',
    operationId: 'abortBulkAction',
    tag,
    summary: 'Stop a running bulk action after its current batch',
    params: bulkActionIdParams,
    body: reasonBody,
    authorize: operatorOrRecordMember('bulk_action', 'jobs.manage'),
    response: { status: 200, description: 'The bulk action, abort requested', schema: bulkEnvelope },
    errors: [404, 409],
    handler: async ({ deps, actor, params, body }) => {
      const row = await abortBulkAction(deps, await bulkActionCaller(deps, actor, params.bulk_action_id), params.bulk_action_id, body.reason);
      return { bulk_action: (await presentBulkActions(deps.db, [row]))[0]! };
    },
  }),
];
