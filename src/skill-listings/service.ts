import { isDeepStrictEqual } from 'node:util';
import type { Knex } from 'knex';
import { requireLive, type Actor } from '../access/index.ts';
import { conflict } from '../core/errors.ts';
import { paginate, type Page, newestFirst } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import { normaliseSlug } from '../organizations/index.ts';
import type { Deps } from '../platform/deps.ts';
import { type ListingRow, type PresentableListing, selectListings } from './presenter.ts';
import { forbiddenField, lockForChange, readListing, requireCatalogFields, requireMove, requirePublishRights, requireRightsToPublish } from './rules.ts';
import type { ListingStatus, createListingBody, updateListingBody } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

const contentFields = ['name', 'description', 'body', 'files'] as const;

/** A draft listing (version 1) copying a live skill the caller may publish (edit rights and the permission); the caller is its author. */
export async function createListing(deps: Pick<Deps, 'db'>, actor: Actor, input: z.output<typeof createListingBody>): Promise<PresentableListing> {
  const skill = await requirePublishRights(deps.db, actor, input.skill_id);
  requireLive(skill, 'skill');
  const files = listingFiles(skill.files);
  const title = input.title ?? skill.name;
  return uniqueSlug(() =>
    inTransaction(deps.db, async (trx) => {
      const slug = input.slug ?? (await freeSlug(trx, normaliseSlug(title)));
      if (input.slug !== undefined) await requireSlugFree(trx, input.slug);
      const [row] = (await trx('skill_listings')
        .insert({
          slug,
          title,
          summary: input.summary ?? skill.description,
          categories: input.categories ?? [],
          examples: input.examples ?? [],
          license: input.license ?? null,
          source_url: input.source_url ?? null,
          // The name a reader of the catalog knows the author by; the user id is never shown there.
          author: actor.name ?? actor.email ?? actor.userId,
          name: skill.name,
          description: skill.description,
          body: skill.body,
          files: JSON.stringify(files),
          skill_id: skill.id,
          created_by_id: actor.userId,
          updated_by_id: actor.userId,
        })
        .returning('id')) as { id: string }[];
      return readListing(trx, actor, row!.id);
    }),
  );
}

/** GET /skill-listings: the caller's own listings (operators: every listing), newest first. */
export function listListings(db: Knex, actor: Actor, q: { status?: ListingStatus | undefined; limit: number; cursor?: string | undefined }) {
  const query = selectListings(db);
  if (!actor.operator) query.where('l.created_by_id', actor.userId);
  if (q.status) query.where('l.status', q.status);
  return paginate<PresentableListing>(query, newestFirst('l'), q) as Promise<Page<PresentableListing>>;
}

/**
 * A sparse change by the author or an operator; `verified` and `rank` are operators' only. A
 * change of content makes a new version; a retired listing is frozen (409) and a published one
 * keeps what the catalog needs.
 */
export async function updateListing(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  id: string,
  changes: z.output<typeof updateListingBody>,
): Promise<PresentableListing> {
  return inTransaction(deps.db, async (trx) => {
    const before = await lockForChange(trx, actor, id);
    for (const field of ['verified', 'rank'] as const) if (changes[field] !== undefined && !actor.operator) throw forbiddenField(field);
    if (before.status === 'retired') throw conflict('status: a retired listing cannot be changed; publish it again first', ['status']);
    const after = { ...before, ...changes } as ListingRow;
    if (before.status === 'published') {
      // What the public catalog shows changes: the author needs publishing rights as they are now.
      const changed = Object.keys(changes).find((field) => changes[field as keyof typeof changes] !== undefined);
      if (changed) await requireRightsToPublish(trx, actor, before, changed);
      requireCatalogFields(after);
    }
    const contentChanged = contentFields.some((field) => changes[field] !== undefined && !isDeepStrictEqual(changes[field], before[field]));
    await trx('skill_listings')
      .where({ id })
      .update({
        ...changes,
        ...(changes.files !== undefined && { files: JSON.stringify(changes.files) }),
        version: contentChanged ? before.version + 1 : before.version,
        updated_by_id: actor.userId,
        updated_at: trx.fn.now(),
      });
    return readListing(trx, actor, id);
  });
}

/**
 * draft → published → retired → published, by the author or an operator; the first publication is
 * remembered. An author publishing needs the rights a new listing needs, as they are now.
 */
export async function changeStatus(deps: Pick<Deps, 'db'>, actor: Actor, id: string, status: ListingStatus): Promise<PresentableListing> {
  return inTransaction(deps.db, async (trx) => {
    const before = await lockForChange(trx, actor, id);
    if (status === 'published') await requireRightsToPublish(trx, actor, before);
    requireMove(before.status, status);
    if (status === 'published') requireCatalogFields(before);
    await trx('skill_listings')
      .where({ id })
      .update({
        status,
        published_at: status === 'published' ? trx.raw('coalesce(published_at, now())') : before.published_at,
        updated_by_id: actor.userId,
        updated_at: trx.fn.now(),
      });
    return readListing(trx, actor, id);
  });
}

/** A listing's files are `[{path, content}]` (spec 2.6): a skill with other files cannot be listed as it is. */
function listingFiles(files: unknown): { path: string; content: string }[] {
  if (files === null || files === undefined) return [];
  const valid =
    Array.isArray(files) &&
    files.every((file) => typeof file === 'object' && file !== null && typeof file.path === 'string' && file.path !== '' && typeof file.content === 'string');
  if (!valid) throw conflict('files: the skill’s files must be a list of {path, content} to be listed', ['files']);
  return (files as { path: string; content: string }[]).map(({ path, content }) => ({ path, content }));
}

async function requireSlugFree(db: Knex, slug: string): Promise<void> {
  if (await db('skill_listings').where({ slug }).first('id')) throw conflict(`slug: the slug "${slug}" is taken`, ['slug']);
}

/** A slug made from the title: itself when free, else the first free `-2`, `-3`… (then a random suffix). */
async function freeSlug(db: Knex, base: string): Promise<string> {
  const candidates = [base, ...Array.from({ length: 8 }, (_, i) => `${base.slice(0, 45)}-${i + 2}`)];
  const taken = new Set((await db('skill_listings').whereIn('slug', candidates).pluck('slug')) as string[]);
  return candidates.find((candidate) => !taken.has(candidate)) ?? `${base.slice(0, 41)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The unique index decides a race between two creates of the same slug: the loser gets the same 409. */
async function uniqueSlug<T>(create: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (error) {
    if ((error as { constraint?: string }).constraint === 'skill_listings_slug_key') throw conflict('slug: the slug is taken', ['slug']);
    throw error;
  }
}
