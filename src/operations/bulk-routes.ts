// The job console's bulk actions: preview, start, list, read and abort a durable bulk action.
import { z } from '../core/zod.ts';
import { jobConsole, operatorOrRecordMember } from '../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { consoleCaller } from './access.ts';
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
  defineRoute({
    method: 'post',
    path: '/ops/bulk-actions/preview',
    operationId: 'previewBulkAction',
    tag,
    summary: 'How many jobs a bulk retry, cancel or redrive would take now, by queue, with a sample',
    description: 'Nothing changes. Dead letters: `action: redrive` with `filter.queue` naming a dead-letter queue (or none: every dead-letter queue).',
    body: bulkRequest,
    authorize: jobConsole('body.filter'),
    response: { status: 200, description: 'The preview', schema: bulkPreviewSchema },
    errors: [403, 503],
    handler: async ({ deps, actor, body }) => previewBulkAction(deps, await consoleCaller(actor, body.filter.organization_id), body.action, body.filter),
  }),
  defineRoute({
    method: 'post',
    path: '/ops/bulk-actions',
    operationId: 'createBulkAction',
    idempotent: {},
    tag,
    summary: 'Start a durable bulk retry, cancel or redrive',
    description:
      'The matching ids are snapshotted now (at most 100,000; jobs arriving later are not swept in), then a job works them in throttled batches (`OPS_BULK_BATCH_SIZE`, `OPS_BULK_PAUSE_MS`); follow `GET /ops/bulk-actions/{id}` for progress and what was skipped, and why. 400 when the filter matches nothing.',
    body: createBulkActionBody,
    authorize: jobConsole('body.filter'),
    response: { status: 202, description: 'The bulk action, running', schema: bulkEnvelope },
    errors: [403],
    handler: async ({ deps, actor, body }) => {
      const caller = await consoleCaller(actor, body.filter.organization_id);
      const row = await createBulkAction(deps, caller, body.action, body.filter, body.reason);
      return { bulk_action: (await presentBulkActions(deps.db, [row]))[0]! };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/ops/bulk-actions',
    operationId: 'listBulkActions',
    tag,
    summary: 'Bulk actions, newest first',
    query: listBulkActionsQuery,
    authorize: jobConsole('query'),
    response: { status: 200, description: 'A page of bulk actions', schema: bulkActionPage },
    errors: [403],
    handler: async ({ deps, actor, query }) => listBulkActions(deps, await consoleCaller(actor, query.organization_id), query),
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
