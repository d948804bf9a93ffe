import { presentPage } from '../core/pagination.ts';
import { accessRecordRoute } from '../http/access-record-route.ts';
import { listing } from '../http/authorize.ts';
import { defineRoute } from '../http/route.ts';
import { forkConversation } from './fork.ts';
import { stampMessageCredits } from './message-credits.ts';
import { forkBody, listMessagesQuery, messageEnvelope, messagePage, postMessageBody, recallPage, recallQuery, stampCreditsBody } from './message-schema.ts';
import { listMessages, postMessage, presentMessage } from './messages.ts';
import { presentRecallHit, recall } from './recall.ts';
import { streamRunEvents } from './run-events.ts';
import { approvalsBody, runEnvelope, runSnapshotBody, startRunBody } from './run-schema.ts';
import { answerApprovals } from './tools/approvals.ts';
import { startPaidRun } from './run-start.ts';
import { getRun, presentRun, saveRunSnapshot, stopRun } from './runs.ts';
import type { AnyRoute } from '../http/route.ts';
import { resourceRoutes } from '../http/resource-routes.ts';
import { conversationResource } from './resource.ts';
import { listConversations } from './list.ts';
import { presentConversation, presentConversationListItem } from './presenter.ts';
import {
  conversationIdParams,
  conversationPage,
  conversationSchema,
  createConversationBody,
  listConversationsQuery,
  updateConversationBody,
} from './schema.ts';
import { createConversation, deleteConversation, getConversation, restoreConversation, updateConversation } from './service.ts';

const tag = 'Conversations';
const conversation = resourceRoutes(conversationResource);

/** Conversations (spec 2.3, 4.10, 4.11): the resource, its messages as a tree, fork, recall, and the run lock with its chat runs. */
export const conversationRoutes: AnyRoute[] = [
  conversation.create({
    path: '/conversations',
    operationId: 'createConversation',
    summary: 'Start a conversation',
    description:
      'The caller becomes its owner. Needs the organization permission `resources.create`; with `project_id` the conversation is filed in that project (the caller must be able to edit it, else 400 on `project_id`). A non-member organization is 404.',
    body: createConversationBody,
    errors: [],
    run: createConversation,
  }),
  conversation.list({
    path: '/conversations',
    operationId: 'listConversations',
    summary: 'List the conversations the caller can read',
    description:
      'Newest first (`created_at`, then `id`), keyset paged: rows created while paging never shift a page. Unreadable conversations are filtered in the query. A caller who is not a member of the organization gets an empty page. Items carry the caller’s list extras `shared`, `can_edit`, `can_delete`.',
    query: listConversationsQuery,
    page: conversationPage,
    run: (deps, actor, query) => listConversations(deps.db, actor, query),
    presentItem: presentConversationListItem,
  }),
  // Before `/conversations/{conversation_id}`: the router runs the first route matching a path.
  defineRoute({
    method: 'get',
    path: '/conversations/recall',
    operationId: 'recallConversationMessages',
    tag,
    summary: 'Search the messages of the conversations the caller can read',
    description:
      'Postgres full-text search (`websearch_to_tsquery`, English) over the messages of live conversations of the organization that the caller can read; a message of any other conversation is never returned. Ranked by relevance (`rank`, highest first), then `message_id`; keyset paged. Each hit carries a bounded snippet with the matches marked. A caller outside the organization gets an empty page.',
    query: recallQuery,
    response: { status: 200, description: 'A page of hits, most relevant first', schema: recallPage },
    authorize: listing('query'),
    handler: async ({ query, actor, deps }) => presentPage(await recall(deps, actor, query), presentRecallHit),
  }),
  conversation.get({
    path: '/conversations/{conversation_id}',
    operationId: 'getConversation',
    summary: 'Get a conversation (also a deleted one, showing `deleted_at`)',
    run: getConversation,
  }),
  conversation.update({
    path: '/conversations/{conversation_id}',
    operationId: 'updateConversation',
    summary: 'Rename a conversation, set its chat settings or switch its active branch',
    description:
      'Needs the editor role. `active_leaf_id` (a message of this conversation, else 400) selects the branch GET /conversations/{conversation_id}/messages reads by default, kept on the server across reloads. Chat settings: `skill_id` (a live skill of the organization you can read, else 400) is the system context of its chat turns, before its projects’ knowledge; `tools` narrows the tools its turns may offer (each name a built-in tool or `<namespace>__<tool>` of an MCP connector you can use, else 400 naming the entry; null lifts it); `approval_tools` names tools whose calls wait for the caller’s approval in its turns. A fork keeps them. A deleted conversation answers 409 until restored.',
    body: updateConversationBody,
    run: updateConversation,
  }),
  conversation.remove({
    path: '/conversations/{conversation_id}',
    operationId: 'deleteConversation',
    summary: 'Delete a conversation (soft delete; restorable)',
    description: 'Needs the owner role (creator, or organization owner/admin). Deleting a deleted conversation is a no-op 204.',
    run: deleteConversation,
  }),
  conversation.restore({
    path: '/conversations/{conversation_id}/restore',
    operationId: 'restoreConversation',
    summary: 'Restore a deleted conversation',
    description: 'Needs the owner role. Restoring a live conversation returns it unchanged.',
    run: restoreConversation,
  }),
  conversation.on('edit', {
    method: 'post',
    path: '/conversations/{conversation_id}/messages',
    operationId: 'postConversationMessage',
    idempotent: {},
    summary: 'Append a message',
    description:
      'Appends under `parent_id` (a message of this conversation, else 400; an older one starts a new branch) or under the active leaf, and makes the new message the active leaf; `message_count`, `last_message_at` and `active_leaf_id` change in the same transaction. Needs the editor role; a deleted conversation answers 409.',
    params: conversationIdParams,
    body: postMessageBody,
    response: { status: 201, description: 'The new message', schema: messageEnvelope },
    errors: [409],
    handler: async ({ params, body, actor, deps }) => ({ message: presentMessage(await postMessage(deps, actor, params.conversation_id, body)) }),
  }),
  conversation.on('read', {
    method: 'get',
    path: '/conversations/{conversation_id}/messages',
    operationId: 'listConversationMessages',
    summary: 'Read a branch of the conversation, oldest first',
    description:
      'The messages from the root to `leaf_id` (default the active leaf; an empty page when the conversation has none), oldest first, keyset paged (later pages stay on the branch of the first). Each message has `sibling_count` and `sibling_index`, so a client can offer the other branches. A `leaf_id` that is not a message of this conversation answers 404.',
    params: conversationIdParams,
    query: listMessagesQuery,
    response: { status: 200, description: 'A page of the branch', schema: messagePage },
    handler: async ({ params, query, actor, deps }) => presentPage(await listMessages(deps, actor, params.conversation_id, query), presentMessage),
  }),
  conversation.on('edit', {
    method: 'post',
    path: '/conversations/{conversation_id}/messages/credits',
    operationId: 'stampConversationMessageCredits',
    summary: 'Stamp a turn’s cost on its message',
    description:
      'Sets the message’s `credits` to the sum of the credits-ledger captures attributed to it: for the answer of a chat run, the captures of that run’s credit hold (its `credits_charged`); for any other message, the captures whose ledger rows name it (`message_id`). Recomputed from the ledger, so repeating it gives the same result. A `message_id` of another conversation is 400. Needs the editor role; a deleted conversation answers 409.',
    params: conversationIdParams,
    body: stampCreditsBody,
    response: { status: 200, description: 'The message with its `credits`', schema: messageEnvelope },
    errors: [409],
    handler: async ({ params, body, actor, deps }) => ({
      message: presentMessage(await stampMessageCredits(deps, actor, params.conversation_id, body.message_id)),
    }),
  }),
  conversation.on('read', {
    method: 'post',
    path: '/conversations/{conversation_id}/fork',
    operationId: 'forkConversation',
    idempotent: {},
    summary: 'Fork a conversation at a message',
    description:
      'A new private conversation owned by the caller, in the same organization, with `forked_from_conversation_id` set and the title suffixed " (fork)". It holds copies (new ids, parents remapped) of the branch root → `message_id` (`mode: branch`, default) or of every message created at or before it (`mode: all`); the copy of `message_id` is its active leaf. Read access to the source is enough, plus `resources.create` in the organization (403). A `message_id` of another conversation is 400; a deleted source is 409.',
    params: conversationIdParams,
    body: forkBody,
    response: { status: 201, description: 'The new conversation', schema: conversationSchema },
    errors: [403, 409],
    handler: async ({ params, body, actor, deps }) => presentConversation(await forkConversation(deps, actor, params.conversation_id, body)),
  }),
  conversation.on('edit', {
    method: 'post',
    path: '/conversations/{conversation_id}/run',
    operationId: 'startConversationRun',
    idempotent: {},
    summary: 'Start a chat run (acquire the run lock)',
    description:
      'Acquires the conversation’s run lock (`active_run_id`, `active_run_at`), enqueues the chat run on a worker and holds credits for the turn’s ceiling (`max_credits`, else computed from the prompt, the model’s prices and `max_tokens`) from the caller’s spending limit and the organization’s balance, all in one transaction. Without credits the answer is 402 `payment_required` (`data.issues[0].path` `["balance"]` or `["spending_limit"]`) and nothing is started: no run, the lock stays free. The worker then streams the answer (the run’s `snapshot` grows with every tick of its worker, `CHAT_STREAM_TICK_MS`, default 50 ms), appends the assistant message under `message_id` (default the active leaf; it becomes the active leaf), captures the credits used (the rest is released) and frees the lock. A live run holding the lock answers 409; the lock is freed when the run’s job ends (a worker that dies has its job retried on another, and a job that fails for good ends the run `failed` and frees the lock). `model` must be available to the organization (400 otherwise); default its first available model. Needs the editor role; a deleted conversation answers 409.\n\n**Tools.** The model may call tools: by default every built-in tool (`search`, `read_url`, the social operations of the catalog, `search_assets` over the assets the caller can read) and the tools of the organization’s MCP connectors the caller can use (those needing no credential and those the caller has set one for); `tools` narrows the set, and so do the conversation’s `tools` and the `chat_tools` of the projects holding it (the turn offers what all of them allow). A round’s calls run in parallel, each within `CHAT_TOOL_TIMEOUT_MS`; their results go back to the model (a failure as the tool’s result, never failing the turn) for at most `CHAT_TOOL_MAX_ROUNDS` rounds, then the model answers without tools. Each round is kept in the tree: an assistant message with `tool_calls`, then one `tool` message per call (`tool_call_id`), the answer under the last. Billed tools go through the metered-read path under the run lock (`tool_call_id`, `conversation_id`, `message_id` on their ledger rows): once the turn is stopped a call is refused and nothing is charged for it, and `max_credits` caps the turn with its tools. The run lists its `tool_calls` with their credits. **Sandbox rule** (the offline `sandbox-chat` model, served by the sandbox whether or not `CHAT_API_URL` is set; each model is served by its catalog `provider`): when tools are offered, each line `/tool <name> <JSON arguments>` of the user’s message becomes one tool call of a single round; after the results it answers quoting the start of each.',
    params: conversationIdParams,
    body: startRunBody,
    response: { status: 201, description: 'The queued run', schema: runEnvelope },
    errors: [402, 409],
    handler: async ({ params, body, actor, deps }) => ({ run: presentRun(await startPaidRun(deps, actor, params.conversation_id, body)) }),
  }),
  conversation.on('read', {
    method: 'get',
    path: '/conversations/{conversation_id}/run',
    operationId: 'getConversationRun',
    summary: 'The current (else the latest) run, with its snapshot',
    description:
      'The run holding the lock, else the conversation’s latest run, with `status` and `snapshot` (the partial output while it runs, the answer once finished). 404 when the conversation never had a run. Read access is enough.',
    params: conversationIdParams,
    response: { status: 200, description: 'The run', schema: runEnvelope },
    handler: async ({ params, actor, deps }) => ({ run: presentRun(await getRun(deps, actor, params.conversation_id)) }),
  }),
  conversation.on('read', {
    method: 'get',
    path: '/conversations/{conversation_id}/run/events',
    operationId: 'streamConversationRunEvents',
    summary: 'Follow the running turn live (Server-Sent Events)',
    description:
      'A `text/event-stream` (not JSON) of the current run (else the latest one; 404 when the conversation never had a run). Events, each `data` a JSON object: `snapshot` `{run_id, status, content}` first (the text so far; sent again if the snapshot was replaced rather than extended), then `delta` `{run_id, text}` with the text appended since the previous event as the worker writes snapshots (every `CHAT_STREAM_TICK_MS`, default 50 ms), `tool_call` `{run_id, tool_call_id, name, arguments, round}` when the model calls a tool and `tool_result` `{run_id, tool_call_id, name, round, status, credits, content}` when it has answered (`content` cut at 2,000 characters; the whole result is the `tool` message), and finally `done` `{run_id, status, answer_message_id}` when the run ends (`succeeded`, `stopped` or `failed`), after which the server closes the stream. `snapshot` and `delta` frames carry an `id:` naming the point of the text they bring it to; reconnecting with `Last-Event-ID` (browsers do it by themselves) resumes right after it — the rest of the text as a `delta`, each character once — or with a `snapshot` when the text was replaced since (an id this stream did not give, too). Tool events are sent again on a reconnection. A run already over gets a single `done`. A `: ping` comment every 15 s keeps proxies from closing an idle stream. Fed by Postgres NOTIFY, so it works whichever web process serves it and whichever worker runs the turn. Read access is enough.',
    params: conversationIdParams,
    response: { status: 200, description: 'A `text/event-stream` of `snapshot`, `delta` and `done` events (see the operation description)' },
    handler: async ({ params, actor, deps, ctx }) => streamRunEvents(deps, actor, params.conversation_id, ctx, ctx.get('last-event-id') || undefined),
  }),
  conversation.on('edit', {
    method: 'delete',
    path: '/conversations/{conversation_id}/run',
    operationId: 'stopConversationRun',
    summary: 'Stop the running turn (release the run lock)',
    description:
      'Cancels the run’s job, which in the same transaction marks the run `stopped`, keeps the answer as its followers last saw it (the `snapshot`) as the assistant message, charges the prompt and that partial answer (estimated from its length), releases the rest of the hold and frees the lock. Its worker is told at commit and aborts the provider call. Without a live run this is a no-op 204 (idempotent). Needs the editor role; a deleted conversation answers 409.',
    params: conversationIdParams,
    response: { status: 204, description: 'Stopped; the lock is free' },
    errors: [409],
    handler: ({ params, actor, deps }) => stopRun(deps, actor, params.conversation_id),
  }),
  conversation.on('edit', {
    method: 'post',
    path: '/conversations/{conversation_id}/run/approvals',
    operationId: 'answerConversationRunApprovals',
    summary: 'Approve or reject the tool calls the turn waits for',
    description:
      'A turn whose model called a tool that needs approval (a tool of a connector with `needs_approval`, one named in its connector’s `approval_tools`, or one named in the conversation’s `approval_tools`; approval is off unless set) stops in `awaiting_approval` — live, holding the lock, with no worker waiting — listing those calls `awaiting_approval` in `tool_calls`. Answer each by its `tool_call_id`: `approve: true` runs it, `false` tells the model the user rejected it. Calls may be answered in several requests; once none is left the turn continues as a new job. Unanswered by `approval_expires_at` (`CHAT_APPROVAL_TTL_SECONDS` after it began waiting), the turn is stopped as by DELETE /run: its usage so far charged, the rest of its hold released, the lock freed. 409 when no turn of the conversation waits for approval; 400 naming `decisions[i].tool_call_id` for a call that is not waiting. Needs the editor role.',
    params: conversationIdParams,
    body: approvalsBody,
    response: { status: 200, description: 'The run with its tool calls as they now stand', schema: runEnvelope },
    errors: [409],
    handler: async ({ params, body, actor, deps }) => ({ run: presentRun(await answerApprovals(deps, actor, params.conversation_id, body)) }),
  }),
  conversation.on('edit', {
    method: 'post',
    path: '/conversations/{conversation_id}/run/snapshot',
    operationId: 'saveConversationRunSnapshot',
    summary: 'Store the partial output of the running turn',
    description:
      'Replaces the live run’s `snapshot` (read it with GET /conversations/{conversation_id}/run). 409 when no live run holds the lock. Needs the editor role.',
    params: conversationIdParams,
    body: runSnapshotBody,
    response: { status: 200, description: 'The run with its new snapshot', schema: runEnvelope },
    errors: [409],
    handler: async ({ params, body, actor, deps }) => ({ run: presentRun(await saveRunSnapshot(deps, actor, params.conversation_id, body.content)) }),
  }),
  accessRecordRoute(conversationResource, { path: '/conversations/{conversation_id}/access', operationId: 'getConversationAccess' }),
];
