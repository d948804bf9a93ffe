import type { Knex } from 'knex';
import type { Actor } from '../access/index.ts';
import { recordActivity } from '../core/activity.ts';
import { badRequest, isAppError, notFound } from '../core/errors.ts';
import { paginate, type Page } from '../core/pagination.ts';
import type { Deps } from '../platform/deps.ts';
import type { ChatModelCopyRow, ChatModelParameters, ChatModelRow, EffectiveChatModel } from './presenter.ts';
import { PRICE_OVERRIDE_MAX_FACTOR } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { configuredProviders, unconfiguredProvider } from '../providers/configured.ts';

/** The organization permission that changes its copy of a chat model (owners and admins hold it). */
export const MANAGE_CHAT_MODELS = 'chat_models.manage';

const pageKeys = [{ column: 'm.id', direction: 'asc', type: 'text' }] as const;
type PageQuery = { limit: number; cursor?: string | undefined };

/** Effective `enabled`: the organization's copy, else the catalog default. */
const enabledSql = 'COALESCE(oc.enabled, m.enabled_by_default)';

/**
 * The catalog, by id. With `organization_id` each entry says whether it is enabled there; a caller
 * outside that organization gets an empty page (spec §4.1: a list naming an organization).
 */
export async function listChatModels(
  deps: Deps,
  actor: Actor,
  query: PageQuery & { organization_id?: string | undefined },
): Promise<Page<ChatModelRow & { enabled: boolean | null }>> {
  const organizationId = query.organization_id;
  if (organizationId === undefined) {
    return paginate(deps.db('chat_models as m').select('m.*', deps.db.raw('NULL::boolean AS enabled')), pageKeys, query);
  }
  if (!(await actor.viewer(organizationId))) return { items: [], next_cursor: null };
  const rows = deps
    .db('chat_models as m')
    .leftJoin('organization_chat_models as oc', (join) => join.on('oc.chat_model_id', 'm.id').andOn('oc.organization_id', deps.db.raw('?', [organizationId])))
    .select('m.*', deps.db.raw(`${enabledSql} AS enabled`));
  return paginate(rows, pageKeys, query);
}

/** The models enabled in the caller's organization whose provider is configured here, with its names, parameters and prices; an empty page to a non-member. */
export async function listAvailableChatModels(deps: Deps, actor: Actor, query: PageQuery & { organization_id: string }): Promise<Page<EffectiveChatModel>> {
  if (!(await actor.viewer(query.organization_id))) return { items: [], next_cursor: null };
  const rows = deps
    .db('chat_models as m')
    .leftJoin('organization_chat_models as oc', (join) =>
      join.on('oc.chat_model_id', 'm.id').andOn('oc.organization_id', deps.db.raw('?', [query.organization_id])),
    )
    .select('m.*', deps.db.raw('CASE WHEN oc.organization_id IS NULL THEN NULL ELSE to_jsonb(oc.*) END AS copy'))
    .whereRaw(enabledSql)
    .whereIn('m.provider', configuredProviders(deps.config, 'chat'));
  const page = await paginate<ChatModelRow & { copy: (Omit<ChatModelCopyRow, 'updated_at'> & { updated_at: string }) | null }>(rows, pageKeys, query);
  return {
    items: page.items.map(({ copy, ...model }) => ({
      model,
      organization_id: query.organization_id,
      copy: copy && { ...copy, updated_at: new Date(copy.updated_at) },
    })),
    next_cursor: page.next_cursor,
  };
}

/** One catalog entry: every signed-in caller may read the catalog. */
/** The whole catalog, by id (GET /models/public lists it beside the generation models). */
export async function chatModelCatalog(db: Knex): Promise<ChatModelRow[]> {
  return (await db('chat_models').orderBy('id').select('*')) as ChatModelRow[];
}

export async function getChatModel(deps: Pick<Deps, 'db'>, id: string): Promise<ChatModelRow> {
  const row = (await deps.db('chat_models').where({ id }).first()) as ChatModelRow | undefined;
  if (!row) throw notFound('chat model');
  return row;
}

/**
 * The organization's copy of a model: any member reads it. A caller outside the organization gets
 * 404, the same answer as for a model that does not exist (the copy belongs to the organization).
 */
export async function getChatModelCopy(deps: Pick<Deps, 'db'>, actor: Actor, chatModelId: string, organizationId: string): Promise<EffectiveChatModel> {
  await actor.member(organizationId).catch((error: unknown) => {
    throw isAppError(error, 'not_found') ? notFound('chat model') : error;
  });
  return effectiveChatModel(deps, chatModelId, organizationId);
}

/** A model as the organization uses it (for chat runs too); 404 for an unknown model. */
/**
 * The model if the organization has it enabled and its provider is configured here; else 400
 * naming `model` (an unknown id answers like a disabled one; an unconfigured provider says which variable enables it).
 */
export async function requireAvailableChatModel(deps: Pick<Deps, 'db' | 'config'>, chatModelId: string, organizationId: string): Promise<EffectiveChatModel> {
  const refused = badRequest(`model: "${chatModelId}" is not a chat model available to the organization`, ['model']);
  const effective = await effectiveChatModel(deps, chatModelId, organizationId).catch((error: unknown) => {
    throw isAppError(error, 'not_found') ? refused : error;
  });
  if (!(effective.copy?.enabled ?? effective.model.enabled_by_default)) throw refused;
  const unconfigured = unconfiguredProvider(deps.config, 'chat', effective.model.provider);
  if (unconfigured) throw badRequest(`model: "${chatModelId}" cannot be used here: ${unconfigured}`, ['model']);
  return effective;
}

export async function effectiveChatModel(deps: Pick<Deps, 'db'>, chatModelId: string, organizationId: string): Promise<EffectiveChatModel> {
  const model = await getChatModel(deps, chatModelId);
  const copy = (await deps.db('organization_chat_models').where({ organization_id: organizationId, chat_model_id: chatModelId }).first()) as
    | ChatModelCopyRow
    | undefined;
  return { model, organization_id: organizationId, copy: copy ?? null };
}

export interface PutChatModelCopyInput {
  organization_id: string;
  enabled: boolean;
  display_name?: string | null | undefined;
  default_parameters?: ChatModelParameters | null | undefined;
  input_credits_per_1k_tokens?: number | null | undefined;
  output_credits_per_1k_tokens?: number | null | undefined;
}

/**
 * Replaces the organization's copy (optional fields omitted or null return to the catalog value).
 * Outside the organization 403 (it is named in the body, never 404); lacking `chat_models.manage` 403;
 * an unknown model 404 to members. Overrides are bounded: catalog price ≤ override ≤ 10 × catalog price.
 */
export async function putChatModelCopy(deps: Pick<Deps, 'db'>, actor: Actor, chatModelId: string, input: PutChatModelCopyInput): Promise<EffectiveChatModel> {
  await actor.within(input.organization_id, MANAGE_CHAT_MODELS);
  const model = await getChatModel(deps, chatModelId);
  checkOverrides(model, input);
  const values = {
    enabled: input.enabled,
    display_name: input.display_name ?? null,
    default_parameters: input.default_parameters == null ? null : JSON.stringify(input.default_parameters),
    input_credits_per_1k_tokens: input.input_credits_per_1k_tokens ?? null,
    output_credits_per_1k_tokens: input.output_credits_per_1k_tokens ?? null,
    updated_by_id: actor.userId,
  };
  return inTransaction(deps.db, async (trx) => {
    const before = (await trx('organization_chat_models').where({ organization_id: input.organization_id, chat_model_id: chatModelId }).forUpdate().first()) as
      | ChatModelCopyRow
      | undefined;
    const [copy] = (await trx('organization_chat_models')
      .insert({ organization_id: input.organization_id, chat_model_id: chatModelId, ...values })
      .onConflict(['organization_id', 'chat_model_id'])
      .merge({ ...values, updated_at: trx.fn.now() })
      .returning('*')) as ChatModelCopyRow[];
    await recordActivity(trx, {
      organizationId: input.organization_id,
      actorId: actor.userId,
      action: 'chat_model_copy.updated',
      subjectType: 'chat_model',
      subjectId: chatModelId,
      data: {
        before: before ? snapshot(before) : null,
        after: snapshot(copy!),
      },
    });
    return { model, organization_id: input.organization_id, copy: copy! };
  });
}

const snapshot = (copy: ChatModelCopyRow) => ({
  enabled: copy.enabled,
  display_name: copy.display_name,
  default_parameters: copy.default_parameters,
  input_credits_per_1k_tokens: copy.input_credits_per_1k_tokens,
  output_credits_per_1k_tokens: copy.output_credits_per_1k_tokens,
});

function checkOverrides(model: ChatModelRow, input: PutChatModelCopyInput): void {
  const maxTokens = input.default_parameters?.max_tokens;
  if (maxTokens !== undefined && maxTokens > model.context_window)
    throw badRequest(`default_parameters.max_tokens: must be at most the model's context window (${model.context_window})`, [
      'default_parameters',
      'max_tokens',
    ]);
  for (const field of ['input_credits_per_1k_tokens', 'output_credits_per_1k_tokens'] as const) {
    const price = input[field];
    if (price == null) continue;
    const floor = model[field];
    const ceiling = floor * PRICE_OVERRIDE_MAX_FACTOR;
    if (price < floor || price > ceiling)
      throw badRequest(`${field}: must be between the catalog price (${floor}) and ${PRICE_OVERRIDE_MAX_FACTOR} times it (${ceiling})`, [field]);
  }
}
