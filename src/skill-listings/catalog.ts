import type { Knex } from 'knex';
import { requireLive, type Actor } from '../access/index.ts';
import { conflict, notFound } from '../core/errors.ts';
import { paginate, type Page } from '../core/pagination.ts';
import { whereContains } from '../core/search.ts';
import type { Deps } from '../platform/deps.ts';
import { createSkillFromListing, type ListingCopy, type SkillRow, updateSkillFromListing } from '../skills/index.ts';
import { type ListingRow, type PresentableListing, selectListings } from './presenter.ts';
import type { listingCategories } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

type CatalogQuery = { q?: string | undefined; category?: (typeof listingCategories)[number] | undefined; limit: number; cursor?: string | undefined };

/** GET /skill-catalog: published listings, best ranked first, then most used, keyset paged. */
export function listCatalog(db: Knex, q: CatalogQuery): Promise<Page<PresentableListing>> {
  const query = selectListings(db).where('l.status', 'published');
  if (q.q) whereContains(query, ['l.title', 'l.summary', 'l.name'], q.q);
  if (q.category) query.whereRaw('? = ANY (l.categories)', [q.category]);
  return paginate<PresentableListing>(
    query,
    [
      { column: 'l.rank', direction: 'desc', type: 'number' },
      { column: 'l.uses', direction: 'desc', type: 'number' },
      { column: 'l.id', direction: 'asc' },
    ],
    q,
  );
}

/** A published listing by slug; anything else is 404. */
export async function getCatalogListing(db: Knex, slug: string): Promise<PresentableListing> {
  const row = (await selectListings(db).where({ 'l.slug': slug, 'l.status': 'published' }).first()) as PresentableListing | undefined;
  if (!row) throw notFound('skill listing');
  return row;
}

const copyOf = (listing: ListingRow): ListingCopy => ({
  listing_id: listing.id,
  listing_version: listing.version,
  listing_edited_at: listing.updated_at,
  author: listing.author,
  name: listing.name,
  description: listing.description,
  body: listing.body,
  files: listing.files,
});

/**
 * Copies a published listing into the organization as a community skill owned by the caller and
 * counts the use, in one transaction (the listing row is locked, so concurrent adds all count).
 * The route has already checked membership and `resources.create`.
 */
export async function addFromCatalog(deps: Pick<Deps, 'db'>, actor: Actor, slug: string, organizationId: string): Promise<SkillRow> {
  return inTransaction(deps.db, async (trx) => {
    const listing = (await trx('skill_listings').where({ slug, status: 'published' }).forUpdate().first()) as ListingRow | undefined;
    if (!listing) throw notFound('skill listing');
    const skill = await createSkillFromListing(trx, actor, organizationId, copyOf(listing));
    await trx('skill_listings').where({ id: listing.id }).increment('uses', 1);
    return skill;
  });
}

/**
 * POST /skills/{skill_id}/listing-update: the skill (editor role) takes its listing's current
 * content as a new version; what it had stays restorable in its history. The listing must have
 * been published (its content is then what the catalog showed last); 409 when already current.
 */
export async function updateFromListing(deps: Pick<Deps, 'db'>, actor: Actor, skillId: string): Promise<SkillRow> {
  return inTransaction(deps.db, async (trx) => {
    const { row: skill } = await actor.resource<SkillRow>(trx, 'skill', skillId, 'edit', { forUpdate: true });
    requireLive(skill, 'skill');
    if (!skill.listing_id) throw conflict('listing_id: this skill was not added from the skill catalog', ['listing_id']);
    const listing = (await trx('skill_listings').where({ id: skill.listing_id }).first()) as ListingRow | undefined;
    if (!listing?.published_at) throw conflict('listing_id: the skill’s listing is no longer in the catalog', ['listing_id']);
    if (skill.listing_version !== null && skill.listing_version >= listing.version) {
      throw conflict(`listing_version: the skill already has the listing’s latest version (${listing.version})`, ['listing_version']);
    }
    return updateSkillFromListing(trx, actor, skill, copyOf(listing));
  });
}
