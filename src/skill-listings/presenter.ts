import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { iso } from '../core/present.ts';
import type { z } from '../core/zod.ts';
import type { ListingStatus, listingCategories, listingSchema } from './schema.ts';

export interface ListingRow {
  id: string;
  slug: string;
  status: ListingStatus;
  title: string;
  summary: string;
  categories: (typeof listingCategories)[number][];
  examples: string[];
  author: string;
  verified: boolean;
  license: string | null;
  source_url: string | null;
  name: string;
  description: string;
  body: string;
  files: { path: string; content: string }[];
  version: number;
  rank: number;
  uses: number;
  cover_key: string | null;
  cover_content_type: string | null;
  cover_updated_at: Date | null;
  skill_id: string | null;
  published_at: Date | null;
  created_by_id: string;
  updated_by_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A listing with its creator and last editor joined from users (selectListings). */
export type PresentableListing = ListingRow & { cb_email: string | null; cb_name: string | null; ub_email: string | null; ub_name: string | null };

/** Listings joined with the users the presenter names; `alias` is `l`. */
export function selectListings(db: Knex): Knex.QueryBuilder {
  return db('skill_listings as l')
    .leftJoin('users as cb', 'cb.id', 'l.created_by_id')
    .leftJoin('users as ub', 'ub.id', 'l.updated_by_id')
    .select('l.*', 'cb.email as cb_email', 'cb.name as cb_name', 'ub.email as ub_email', 'ub.name as ub_name');
}

/**
 * A deterministic avatar without storing one: Gravatar's identicon for the e-mail (SHA-256 of the
 * trimmed, lower-cased address, as Gravatar accepts), so the same user always gets the same picture.
 */
export function avatarUrl(email: string | null): string {
  if (!email) return '';
  return `https://www.gravatar.com/avatar/${createHash('sha256').update(email.trim().toLowerCase()).digest('hex')}?d=identicon`;
}

function person(id: string | null, email: string | null, name: string | null) {
  if (!id) return null;
  const trimmed = name?.trim() ?? '';
  const space = trimmed.indexOf(' ');
  return {
    id,
    first_name: trimmed === '' ? null : space < 0 ? trimmed : trimmed.slice(0, space),
    last_name: space < 0 ? null : trimmed.slice(space + 1).trim() || null,
    email: email ?? '',
    image_url: avatarUrl(email),
  };
}

export function presentListing(row: PresentableListing): z.input<typeof listingSchema> {
  return {
    id: row.id,
    slug: row.slug,
    status: row.status,
    title: row.title,
    summary: row.summary,
    categories: row.categories,
    // The version query makes clients refetch when the cover changes.
    cover_url: row.cover_key ? `/skill-listings/${row.id}/cover?v=${row.cover_updated_at?.getTime() ?? 0}` : null,
    examples: row.examples,
    author: row.author,
    verified: row.verified,
    license: row.license,
    source_url: row.source_url,
    name: row.name,
    description: row.description,
    body: row.body,
    version: row.version,
    rank: row.rank,
    published_at: iso(row.published_at),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    files: row.files,
    uses: row.uses,
    created_by: person(row.created_by_id, row.cb_email, row.cb_name),
    updated_by: person(row.updated_by_id, row.ub_email, row.ub_name),
  };
}
