import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { type Actor, requireProjectToFileInto } from '../access/index.ts';
import { badRequest, conflict, forbidden, isAppError, notFound } from '../core/errors.ts';
import { type Page, paginate } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import { inTransaction } from '../db/transaction.ts';
import type { EndReason } from '../jobs/define.ts';
import { cancelWorkOn } from '../jobs/ends.ts';
import type { EnqueueOptions } from '../jobs/enqueue.ts';
import { acceptCall, type CallTerms } from '../metering/index.ts';
import type { Deps } from '../platform/deps.ts';
import { generationJob } from './jobs.ts';
import type { GenerationRow } from './presenter.ts';
import { quoteGeneration } from './quote.ts';
import { readableGenerationSql } from './readable.ts';
import type { createGenerationBody, listGenerationsQuery, updateGenerationBody } from './schema.ts';
import { generationEnds } from './ends.ts';

/**
 * Accepts a generation: quote, check the project it files into, then its credit hold alone (one
 * autocommitted statement: the organization's balance row is locked for that statement only, never
 * across a round trip — every hold and capture of the organization queues on that row), then in one
 * transaction its metered call, its row and its job (acceptCall `holdFirst`). A 402 writes nothing;
 * a refusal after the hold (the project changed meanwhile) gives the hold back at once. The worker
 * runs it (./handlers.ts).
 */
export async function createGeneration(
  deps: Deps,
  actor: Actor,
  body: z.output<typeof createGenerationBody>,
  requestId: string | undefined,
  /** A chat turn's tool call: its attribution and run lock, the call's id it chose, and the job to send when the generation ends. */
  options: { terms?: Pick<CallTerms, 'tool_call_id' | 'message_id' | 'run_lock'>; callId?: string; continueWith?: EnqueueOptions['continueWith'] } = {},
): Promise<GenerationRow> {
  const quote = await quoteGeneration(deps, body);
  if (body.canvas_id) await requireReadable(actor, deps, 'canvas', body.canvas_id, body.organization_id, 'canvas_id');
  const id = randomUUID();
  const callId = options.callId ?? randomUUID();
  // Before anything is held, so a refusal writes nothing; again where the generation is filed (it may change meanwhile).
  if (body.project_id) await inTransaction(deps.db, (trx) => requireProjectToFileInto(trx, actor, body.organization_id, body.project_id!));
  const input = { kind: body.kind, model: quote.model.id, prompt: body.prompt, parameters: body.parameters ?? {} };
  let created: GenerationRow | undefined;
  await acceptCall(
    deps,
    actor,
    { operation: `generation:${quote.model.id}`, quote: { credits: quote.credits, pages: quote.units }, input, timeoutMs: deps.config.GENERATION_TIMEOUT_MS },
    { organization_id: body.organization_id, max_credits: body.max_credits, conversation_id: body.conversation_id, ...options.terms },
    { id: callId, requestId },
    async (trx) => {
      if (body.project_id) await requireProjectToFileInto(trx, actor, body.organization_id, body.project_id);
      // As inserted (queued): the answer needs no read of its own after the commit.
      [created] = (await trx('generations')
        .insert({
          id,
          organization_id: body.organization_id,
          created_by_id: actor.userId,
          ...input,
          parameters: JSON.stringify(input.parameters),
          title: body.title ?? null,
          conversation_id: body.conversation_id ?? null,
          canvas_id: body.canvas_id ?? null,
          project_id: body.project_id ?? null,
          call_id: callId,
          quoted_credits: quote.credits,
          max_credits: body.max_credits ?? null,
        })
        .returning('*')) as GenerationRow[];
      await deps.jobs.enqueue(trx, generationJob, { generation_id: id }, { organizationId: body.organization_id, continueWith: options.continueWith });
    },
    { holdFirst: true },
  );
  return created!;
}

async function requireReadable(actor: Actor, deps: Deps, type: 'canvas', id: string, organizationId: string, field: string): Promise<void> {
  const refused = badRequest(`${field}: no ${type} ${id} that you can read in this organization`, [field]);
  const { row } = await actor.resource(deps.db, type, id, 'read').catch((error: unknown) => {
    throw isAppError(error, 'not_found') ? refused : error;
  });
  if (row.organization_id !== organizationId || row.deleted_at !== null) throw refused;
}

/** The generation if the caller may read it; 404 otherwise (the same as a missing id). */
export async function getGeneration(deps: Pick<Deps, 'db'>, actor: Actor, id: string, db: Knex = deps.db): Promise<GenerationRow> {
  const found = (await db('generations').where({ id }).first('organization_id')) as { organization_id: string } | undefined;
  const viewer = found && (await actor.viewer(found.organization_id));
  if (!viewer) throw notFound('generation');
  const readable = readableGenerationSql('g', viewer);
  const row = (await db('generations as g')
    .where('g.id', id)
    .whereRaw(readable.sql, readable.bindings as Knex.RawBinding[])
    .first('g.*')) as GenerationRow | undefined;
  if (!row) throw notFound('generation');
  return row;
}

/** Readable generations of the organization, newest first, keyset paged; an empty page outside it. */
export async function listGenerations(deps: Pick<Deps, 'db'>, actor: Actor, query: z.output<typeof listGenerationsQuery>): Promise<Page<GenerationRow>> {
  const viewer = await actor.viewer(query.organization_id);
  if (!viewer) return { items: [], next_cursor: null };
  const readable = readableGenerationSql('g', viewer);
  const rows = deps
    .db('generations as g')
    .whereRaw(readable.sql, readable.bindings as Knex.RawBinding[])
    .modify((q) => {
      if (query.kind) q.where('g.kind', query.kind);
      if (query.status) q.where('g.status', query.status);
      if (query.conversation_id) q.where('g.conversation_id', query.conversation_id);
      if (query.project_id) q.where('g.project_id', query.project_id);
    })
    .select('g.*');
  return paginate<GenerationRow>(
    rows,
    [
      { column: 'g.created_at', direction: 'desc', type: 'timestamp' },
      { column: 'g.id', direction: 'desc' },
    ],
    query,
  );
}

/**
 * Renames and/or cancels. Only its creator and the organization's admins (403 for other readers).
 * Cancel cancels its job: the generation ends `canceled` with its hold released in that
 * transaction, and a running worker is told at commit and aborts the provider call.
 */
export async function updateGeneration(deps: Deps, actor: Actor, id: string, body: z.output<typeof updateGenerationBody>): Promise<GenerationRow> {
  const row = await getGeneration(deps, actor, id);
  const viewer = (await actor.viewer(row.organization_id))!;
  if (row.created_by_id !== actor.userId && !viewer.administers) throw forbidden('only its creator or an organization admin may change a generation');
  if (body.status === 'canceled') {
    if (row.status !== 'queued' && row.status !== 'running')
      throw conflict(`status: the generation is already ${row.status}; only a queued or running one can be canceled`, ['status']);
    const ended = await cancelGeneration(deps, id, { code: 'canceled', message: 'canceled by the caller' });
    if (ended.status !== 'canceled')
      throw conflict(`status: the generation already ${ended.status === 'succeeded' ? 'succeeded' : 'ended'}; it cannot be canceled`, ['status']);
  }
  if (body.title !== undefined) await deps.db('generations').where({ id }).update({ title: body.title, updated_at: deps.db.fn.now() });
  return getGeneration(deps, actor, id);
}

/**
 * Cancels the generation's job, which ends the generation `canceled` (its metered call's hold
 * released) in the same transaction; a generation whose job is gone (deleted by an operator) is
 * ended directly. Returns the generation as it now stands — succeeded, if its result won the race.
 */
async function cancelGeneration(deps: Deps, id: string, reason: EndReason): Promise<GenerationRow> {
  return inTransaction(deps.db, async (trx) => {
    if ((await cancelWorkOn(trx, deps, generationJob, 'generation_id', id, reason)) === 0)
      await generationEnds.canceled(trx, { generation_id: id }, reason, { deps, jobId: null });
    return (await trx('generations').where({ id }).first()) as GenerationRow;
  });
}
