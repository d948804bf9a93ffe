import { allOf, anyOf, holder, member } from '../http/authorize.ts';
import { organizationIdParams } from '../core/zod.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { createAdjustment } from './adjustments.ts';
import { beginChatRun, captureChatRun, settleChatRun } from './chat-runs.ts';
import {
  adjustmentBody,
  adjustmentEnvelope,
  beginRunBody,
  captureEnvelope,
  captureRunBody,
  creditsSchema,
  cycleSchema,
  holdEnvelope,
  memberCreditsSchema,
  memberParams,
  settleRunBody,
  transactionsPage,
  transactionsQuery,
  updateMemberCreditsBody,
} from './schema.ts';
import { getCredits, getCycle, getMemberCredits, updateMemberCredits } from './service.ts';
import { listTransactions } from './transactions.ts';

const tag = 'Credits';
/** A chat run's own member, or whoever manages credits; to others the run does not exist. */
const chatRunHolderOrManager = allOf(member(), anyOf(holder('chat_run', 'user_id'), member('credits.manage')));
const replayNote = ' Honours `Idempotency-Key`.';

export const creditRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/organizations/{organization_id}/credits',
    operationId: 'getCredits',
    summary: 'Balance, held and available credits, and the grants they come from',
    tag,
    params: organizationIdParams,
    response: { status: 200, description: 'The credits of the organization', schema: creditsSchema },
    errors: [403, 404],
    authorize: member('credits.view'),
    handler: async ({ params, deps }) => getCredits(deps, params.organization_id),
  }),
  defineRoute({
    method: 'get',
    path: '/organizations/{organization_id}/credits/cycle',
    operationId: 'getCreditCycle',
    summary: 'The current credit period (plan cycle, or the calendar month in UTC) and what was granted and used in it',
    tag,
    params: organizationIdParams,
    response: { status: 200, description: 'The current credit cycle', schema: cycleSchema },
    errors: [403, 404],
    authorize: member('credits.view'),
    handler: async ({ params, deps }) => getCycle(deps, params.organization_id),
  }),
  defineRoute({
    method: 'get',
    path: '/organizations/{organization_id}/credits/transactions',
    operationId: 'listCreditTransactions',
    summary: 'The credits ledger, newest first',
    description: 'Every movement of credits as an immutable double-entry row. Filter by kind, member, conversation, tool call, run or time.',
    tag,
    params: organizationIdParams,
    query: transactionsQuery,
    response: { status: 200, description: 'A page of ledger entries', schema: transactionsPage },
    errors: [403, 404],
    authorize: member('credits.view'),
    handler: async ({ params, query, deps }) => listTransactions(deps, params.organization_id, query),
  }),
  defineRoute({
    method: 'post',
    path: '/organizations/{organization_id}/credits/chat-runs/begin',
    operationId: 'beginChatRunCredits',
    summary: 'Reserve credits for a chat run',
    description:
      'Places a hold of `amount` credits for `run_id`. Beginning the same run again with the same body returns the same hold and reserves nothing more; ' +
      'with another amount, conversation or member it is a 409. `conversation_id` and `message_id` attribute the costs: a conversation the caller can read in this organization and a message of it (a `message_id` alone stands for its conversation); anything else is 404 naming the field, the same whether it is missing, unreadable, deleted or elsewhere. 402 when the workspace balance (`data.issues[0].path` = `["balance"]`) or the member’s spending limit (`["spending_limit"]`) cannot cover it.' +
      replayNote,
    tag,
    params: organizationIdParams,
    idempotent: { mode: 'transaction' },
    body: beginRunBody,
    response: { status: 201, description: 'The hold of the run', schema: holdEnvelope },
    errors: [402, 403, 404, 409, 422],
    authorize: member('resources.create'),
    handler: async ({ params, body, actor, deps, idempotency }) => beginChatRun(deps, actor, params.organization_id, body, idempotency),
  }),
  defineRoute({
    method: 'post',
    path: '/organizations/{organization_id}/credits/chat-runs/capture',
    operationId: 'captureChatRunCredits',
    summary: 'Record credits a chat run used',
    description:
      'Captures part of the run’s hold; captures are final and together never exceed the hold (409). Repeating a capture with the same `capture_id` (or `tool_call_id`) ' +
      'returns the first result and writes nothing. After the run is settled, released or expired: 409.' +
      replayNote,
    tag,
    params: organizationIdParams,
    idempotent: { mode: 'transaction' },
    body: captureRunBody,
    response: { status: 200, description: 'The capture and the run’s hold after it', schema: captureEnvelope },
    errors: [403, 404, 409, 422],
    authorize: chatRunHolderOrManager,
    handler: async ({ params, body, actor, deps, idempotency }) => captureChatRun(deps, actor, params.organization_id, body, idempotency),
  }),
  defineRoute({
    method: 'post',
    path: '/organizations/{organization_id}/credits/chat-runs/settle',
    operationId: 'settleChatRunCredits',
    summary: 'Close a chat run: captures stay, the rest of the hold is released',
    description: `Settling again returns the same hold and writes nothing. A run that was released or expired cannot be settled (409).${replayNote}`,
    tag,
    params: organizationIdParams,
    idempotent: { mode: 'transaction' },
    body: settleRunBody,
    response: { status: 200, description: 'The resolved hold', schema: holdEnvelope },
    errors: [403, 404, 409, 422],
    authorize: chatRunHolderOrManager,
    handler: async ({ params, body, actor, deps, idempotency }) => settleChatRun(deps, actor, params.organization_id, body, idempotency),
  }),
  defineRoute({
    method: 'post',
    path: '/organizations/{organization_id}/credits/adjustments',
    operationId: 'adjustCredits',
    summary: 'Correct the balance with new ledger rows (credits.manage)',
    description:
      'A positive `amount` adds a grant of source `adjustment`; a negative one takes credits back from the grants in draw-down order (earliest expiry first, then priority, then creation) ' +
      'as `adjustment` rows moving available → issued. Taking back more than `available` is a 409 naming `amount`: the balance never goes below zero. ' +
      'Nothing is ever edited; the activity feed records `credits.adjusted`. `user_id` (default: the actor) must be a member (404).' +
      replayNote,
    tag,
    params: organizationIdParams,
    idempotent: { mode: 'transaction' },
    body: adjustmentBody,
    response: { status: 201, description: 'The ledger rows written and the credits after them', schema: adjustmentEnvelope },
    errors: [403, 404, 409, 422],
    authorize: member('credits.manage'),
    handler: async ({ params, body, actor, deps, idempotency }) => createAdjustment(deps, actor, params.organization_id, body, idempotency),
  }),
  defineRoute({
    method: 'get',
    path: '/organizations/{organization_id}/members/{user_id}/credits',
    operationId: 'getMemberCredits',
    summary: "A member's spending limit and what they used this period",
    description: 'Members see their own; seeing another member needs `credits.view`.',
    tag,
    params: memberParams,
    response: { status: 200, description: 'The member’s credits', schema: memberCreditsSchema },
    errors: [403, 404],
    authorize: member('credits.view', { self: 'user_id' }),
    handler: async ({ params, deps }) => getMemberCredits(deps, params.organization_id, params.user_id),
  }),
  defineRoute({
    method: 'patch',
    path: '/organizations/{organization_id}/members/{user_id}/credits',
    operationId: 'updateMemberCredits',
    summary: "Set or remove a member's spending limit (credits.manage)",
    description: 'The limit counts credits captured this period plus credits the member holds now; a hold beyond it is refused with 402.',
    tag,
    params: memberParams,
    body: updateMemberCreditsBody,
    response: { status: 200, description: 'The member’s credits', schema: memberCreditsSchema },
    errors: [403, 404],
    authorize: member('credits.manage'),
    handler: async ({ params, body, actor, deps }) => updateMemberCredits(deps, actor, params.organization_id, params.user_id, body.spending_limit),
  }),
];
