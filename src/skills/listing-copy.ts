import type { Knex } from 'knex';
import type { Actor } from '../access/index.ts';
import { recordActivity } from '../core/activity.ts';
import type { SkillRow } from './presenter.ts';
import { requireNameFree } from './service.ts';
import { appendVersion, jsonFiles, recordFirstVersion } from './versions.ts';

/** What a skill copies from a published catalog listing (the skill-listings domain reads it). */
export interface ListingCopy {
  listing_id: string;
  listing_version: number;
  /** When the listing was last changed: the moment of the listing this copy reflects. */
  listing_edited_at: Date;
  author: string;
  name: string;
  description: string;
  body: string;
  files: unknown;
}

/**
 * A community skill copied from a listing into an organization, with its version 1, in the
 * caller's transaction (the listing's use count changes in the same one). The caller owns it.
 */
export async function createSkillFromListing(trx: Knex.Transaction, actor: Actor, organizationId: string, copy: ListingCopy): Promise<SkillRow> {
  await requireNameFree(trx, organizationId, copy.name);
  const [skill] = (await trx('skills')
    .insert({
      organization_id: organizationId,
      source: 'community',
      ...jsonFiles(copy),
      author: copy.author,
      listing_id: copy.listing_id,
      listing_version: copy.listing_version,
      listing_edited_at: copy.listing_edited_at,
      created_by_id: actor.userId,
    })
    .returning('*')) as SkillRow[];
  await recordFirstVersion(trx, skill!, actor.userId);
  await recordActivity(trx, {
    organizationId,
    actorId: actor.userId,
    action: 'skill.created',
    subjectType: 'skill',
    subjectId: skill!.id,
    data: { name: skill!.name, version: 1, listing_id: copy.listing_id, listing_version: copy.listing_version },
  });
  return skill!;
}

/**
 * Brings a skill (locked and authorized by the caller) to a newer listing version as its next
 * version: the content it had stays in its history, restorable like any other version.
 */
export async function updateSkillFromListing(trx: Knex.Transaction, actor: Actor, before: SkillRow, copy: ListingCopy): Promise<SkillRow> {
  if (copy.name.toLowerCase() !== before.name.toLowerCase()) await requireNameFree(trx, before.organization_id!, copy.name);
  const { version } = await appendVersion(trx, before, copy, actor.userId);
  const [skill] = (await trx('skills')
    .where({ id: before.id })
    .update({ listing_version: copy.listing_version, listing_edited_at: copy.listing_edited_at })
    .returning('*')) as SkillRow[];
  await recordActivity(trx, {
    organizationId: before.organization_id!,
    actorId: actor.userId,
    action: 'skill.listing_updated',
    subjectType: 'skill',
    subjectId: before.id,
    data: { version: version.version, listing_id: copy.listing_id, listing_version: copy.listing_version, previous_listing_version: before.listing_version },
  });
  return skill!;
}
