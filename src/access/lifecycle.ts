import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import { conflict, notFound } from '../core/errors.ts';
import { decodeCursor, paginate, type Page } from '../core/pagination.ts';
import { whereContains } from '../core/search.ts';
import type { Deps } from '../platform/deps.ts';
import type { Actor } from './actor.ts';
import { entryOf, nounOf, type ResourceTypeDeclaration as ResourceEntry } from './registry.ts';
import { whereReadable } from './sql.ts';
import type { Capability, ResourceType, Viewer } from './types.ts';
import { inTransaction } from '../db/transaction.ts';

/**
 * The lifecycle every soft-deletable resource shares — update while live, soft delete, restore,
 * list what the caller can read — written once and driven by the resource registry
 * (./resources.ts). Each step is one transaction: the row is locked and authorized first, the
 * change and its activity entry follow, so nothing is half-written.
 */

interface LiveRow {
  /** Never null for a row reached through the actor (it joins the caller's membership of it). */
  organization_id: string | null;
  deleted_at: Date | null;
}

function registered(type: ResourceType): ResourceEntry {
  const entry = entryOf(type);
  if (!entry) throw notFound(nounOf(type));
  return entry;
}

/**
 * The activity entry of a step of a resource's lifecycle — `<activity word>.created`, `.deleted` or
 * `.restored` (the word of its declaration: `canvas.created`, `conversation.deleted`) — written in
 * the step's transaction.
 */
export async function recordLifecycle(
  trx: Knex.Transaction,
  actor: Actor,
  type: ResourceType,
  resource: { id: string; organization_id: string | null },
  step: 'created' | 'deleted' | 'restored',
  data?: Record<string, unknown>,
): Promise<void> {
  await recordActivity(trx, {
    organizationId: resource.organization_id!,
    actorId: actor.userId,
    action: `${registered(type).activity}.${step}`,
    subjectType: type,
    subjectId: resource.id,
    ...(data && { data }),
  });
}

/** Sharing settings and contents of a deleted resource stay frozen until it is restored. */
export function requireLive(row: { deleted_at?: Date | null }, type: ResourceType): void {
  if (row.deleted_at) throw conflict(`this ${nounOf(type)} is deleted; restore it first`);
}

/**
 * Changes a live resource the caller may `capability` (default edit): `change` runs in the
 * transaction with the locked row as it was and returns the new row. 409 when it is deleted.
 */
export async function changeLive<Row extends LiveRow, Result = Row>(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  type: ResourceType,
  id: string,
  change: (trx: Knex.Transaction, before: Row) => Promise<Result>,
  capability: Capability = 'edit',
): Promise<Result> {
  return inTransaction(deps.db, async (trx) => {
    const { row } = await actor.resource<Row>(trx, type, id, capability, { forUpdate: true });
    requireLive(row, type);
    return change(trx, row);
  });
}

/** Soft delete (owners): the row keeps `deleted_at`/`deleted_by_id`. Deleting a deleted one changes nothing. */
export async function softDelete<Row extends LiveRow>(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  type: ResourceType,
  id: string,
  activityData?: (row: Row) => Record<string, unknown>,
): Promise<void> {
  const entry = registered(type);
  await inTransaction(deps.db, async (trx) => {
    const { row } = await actor.resource<Row>(trx, type, id, 'delete', { forUpdate: true });
    if (row.deleted_at) return;
    await trx(entry.table).where({ id }).update({ deleted_at: trx.fn.now(), deleted_by_id: actor.userId, updated_at: trx.fn.now() });
    await recordLifecycle(trx, actor, type, { ...row, id }, 'deleted', activityData?.(row));
  });
}

/** Clears the deletion (owners); restoring a live resource returns it unchanged. */
export async function restore<Row extends LiveRow>(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  type: ResourceType,
  id: string,
  options: {
    returning: readonly string[];
    activityData?: (row: Row) => Record<string, unknown>;
    /** A rule the restored row must keep (e.g. a name that must still be free): throw to refuse. */
    check?: (trx: Knex.Transaction, row: Row) => Promise<void>;
    /** Columns the type sets again on restore (e.g. a scheduled task's next slot, from now). */
    reset?: (row: Row) => Record<string, unknown>;
  },
): Promise<Row> {
  const entry = registered(type);
  const { returning, activityData, check, reset } = options;
  return inTransaction(deps.db, async (trx) => {
    const { row } = await actor.resource<Row>(trx, type, id, 'restore', { forUpdate: true });
    if (!row.deleted_at) return row;
    await check?.(trx, row);
    const [restored] = (await trx(entry.table)
      .where({ id })
      .update({ ...reset?.(row), deleted_at: null, deleted_by_id: null, updated_at: trx.fn.now() })
      .returning([...returning])) as Row[];
    await recordLifecycle(trx, actor, type, { ...row, id }, 'restored', activityData?.(row));
    return restored!;
  });
}

/** The filters every resource list shares (spec §4.10 and its kin). */
export interface ReadableListQuery {
  organization_id: string;
  deleted?: boolean | undefined;
  created_by?: string | undefined;
  project_id?: string | undefined;
  search?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/**
 * One page of the resources of `type` the caller can read, newest first: the readable-by predicate,
 * the deleted/created_by/project/search filters and the keyset all run in SQL, so a page never
 * holds a row the caller cannot read and every row appears once across pages. A caller outside
 * the organization gets an empty page (spec §4.1). `refine` adds the type's own filters.
 */
export async function listReadable<Row extends object>(
  db: Knex,
  actor: Actor,
  type: ResourceType,
  query: ReadableListQuery,
  options: {
    alias: string;
    columns: readonly string[];
    searchColumns: readonly string[];
    /** The type's own filters and selects (e.g. list extras computed for `viewer`). */
    refine?: (q: Knex.QueryBuilder, viewer: Viewer) => void;
  },
): Promise<Page<Row>> {
  const entry = registered(type);
  const viewer = await actor.viewer(query.organization_id);
  if (!viewer) return { items: [], next_cursor: null };
  const a = options.alias;
  const q = whereReadable(db(`${entry.table} as ${a}`).select(options.columns.map((column) => `${a}.${column}`)), type, a, viewer);
  if (query.deleted) q.whereNotNull(`${a}.deleted_at`);
  else q.whereNull(`${a}.deleted_at`);
  if (query.created_by) q.where(`${a}.created_by_id`, query.created_by);
  if (query.project_id) {
    q.whereExists((filed) =>
      filed.select(db.raw('1')).from('project_items as pi').where({ 'pi.item_type': type, 'pi.project_id': query.project_id }).whereRaw(`pi.item_id = ${a}.id`),
    );
  }
  if (query.search)
    whereContains(
      q,
      options.searchColumns.map((column) => `${a}.${column}`),
      query.search,
    );
  options.refine?.(q, viewer);
  // Redundant with the keyset condition, but as a plain bound the (organization, created_at) index
  // can seek to it, so a deep page costs what the first one does (bench/conversations.ts).
  if (query.cursor !== undefined) q.whereRaw(`${a}.created_at <= ?::timestamptz`, [decodeCursor(query.cursor, 2)[0]!]);
  return paginate<Row & object>(
    q,
    [
      { column: `${a}.created_at`, direction: 'desc', type: 'timestamp' },
      { column: `${a}.id`, direction: 'desc' },
    ],
    query,
  );
}
