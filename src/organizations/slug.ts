import type { Knex } from 'knex';

/** Lowercase ASCII letters and digits, words joined by single hyphens, at most 48 characters. */
export function normaliseSlug(text: string): string {
  const slug = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/g, '');
  return slug || 'workspace';
}

export async function isSlugTaken(db: Knex, slug: string): Promise<boolean> {
  return Boolean(await db('organizations').where({ slug }).first('id'));
}

/** The slug itself when free, else the first free `slug-2`, `slug-3`… (then a random suffix). */
export async function availableSlug(db: Knex, wanted: string): Promise<string> {
  const base = normaliseSlug(wanted);
  const candidates = [base, ...Array.from({ length: 8 }, (_, i) => `${base.slice(0, 45)}-${i + 2}`)];
  const taken = new Set<string>((await db('organizations').whereIn('slug', candidates).pluck('slug')) as string[]);
  const free = candidates.find((candidate) => !taken.has(candidate));
  return free ?? `${base.slice(0, 41)}-${Math.random().toString(36).slice(2, 8)}`;
}
