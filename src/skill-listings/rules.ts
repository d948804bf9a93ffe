import type { Knex } from 'knex';
import type { Actor } from '../access/index.ts';
import { AppError, conflict, forbidden, isAppError, notFound } from '../core/errors.ts';
import type { SkillRow } from '../skills/index.ts';
import { type ListingRow, type PresentableListing, selectListings } from './presenter.ts';
import type { ListingStatus } from './schema.ts';

/**
 * Who may do what with a listing. Listings belong to no organization: their author and the
 * service's operators manage them; a published listing is readable by any signed-in caller, and
 * anything else is 404 to everyone but its author and operators (ids cannot be probed).
 */
export const manages = (actor: Actor, row: Pick<ListingRow, 'created_by_id'>) => actor.operator || row.created_by_id === actor.userId;
export const reads = (actor: Actor, row: Pick<ListingRow, 'created_by_id' | 'status'>) => manages(actor, row) || row.status === 'published';

/** The listing with its people, or 404 when it does not exist or the caller cannot read it. */
export async function readListing(db: Knex, actor: Actor, id: string): Promise<PresentableListing> {
  const row = (await selectListings(db).where('l.id', id).first()) as PresentableListing | undefined;
  if (!row || !reads(actor, row)) throw notFound('skill listing');
  return row;
}

/** Locks the listing for a change the author or an operator may make: 404 unreadable, 403 readable only. */
export async function lockForChange(trx: Knex.Transaction, actor: Actor, id: string): Promise<ListingRow> {
  const row = (await trx('skill_listings').where({ id }).forUpdate().first()) as ListingRow | undefined;
  if (!row || !reads(actor, row)) throw notFound('skill listing');
  if (!manages(actor, row)) throw forbidden('only the listing’s author or an operator may change it');
  return row;
}

export const publishPermission = 'skill_listings.publish';

/**
 * What putting an organization's skill into the global catalog takes: edit rights on the skill
 * (404 when the caller cannot read it, 403 when they only view it) and `skill_listings.publish`
 * in the skill's organization (403). Reading a skill is not enough: the catalog is public.
 */
export async function requirePublishRights(db: Knex, actor: Actor, skillId: string): Promise<SkillRow> {
  const { row, viewer } = await actor.resource<SkillRow>(db, 'skill', skillId, 'edit');
  await actor.member(viewer.organizationId, publishPermission);
  return row;
}

/**
 * Publishing a listing again, or changing what the catalog shows of a published one, checks its
 * author's rights on the skill as they are now (a role or a grant taken away since the draft was
 * made). The caller sees the listing, so what they lack is a 403 naming `field`, also when the
 * skill is gone or no longer readable to them. Operators moderate the catalog.
 */
export async function requireRightsToPublish(db: Knex, actor: Actor, listing: Pick<ListingRow, 'skill_id'>, field = 'status'): Promise<void> {
  if (actor.operator) return;
  const message = `${field}: publishing needs edit rights on the listing’s skill and the permission ${publishPermission} in its organization`;
  const refused = new AppError('forbidden', message, [{ path: [field], message }]);
  if (!listing.skill_id) throw refused;
  try {
    await requirePublishRights(db, actor, listing.skill_id);
  } catch (error) {
    throw isAppError(error, 'not_found') || isAppError(error, 'forbidden') ? refused : error;
  }
}

/** 403 naming the field a non-operator sent. */
export function forbiddenField(field: string): AppError {
  const message = `${field}: only operators of the service may set it`;
  return new AppError('forbidden', message, [{ path: [field], message }]);
}

/** The moves of a listing's status; anything else is 409 naming `status`. */
export const statusMoves: Record<ListingStatus, readonly ListingStatus[]> = { draft: ['published'], published: ['retired'], retired: ['published'] };

export function requireMove(from: ListingStatus, to: ListingStatus): void {
  const allowed = statusMoves[from];
  if (!allowed.includes(to)) throw conflict(`status: a ${from} listing can move only to ${allowed.join(' or ')}, not to ${to}`, ['status']);
}

/** What the catalog shows about every published listing: publishing (and editing one that is published) needs it. */
export function requireCatalogFields(row: Pick<ListingRow, 'title' | 'summary' | 'categories' | 'name' | 'body'>): void {
  const missing = (['title', 'summary', 'categories', 'name', 'body'] as const).find((field) =>
    field === 'categories' ? row.categories.length === 0 : row[field].trim() === '',
  );
  if (missing === 'categories') throw conflict('categories: a published listing needs at least one category', ['categories']);
  if (missing) throw conflict(`${missing}: a published listing needs a non-empty ${missing}`, [missing]);
}
