import { imageUploadBody, imageUrlQuery, type UploadImageType } from '../core/image-upload.ts';
import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, singleLine, timestamp, uuid, z } from '../core/zod.ts';

export const listingCategories = ['marketing', 'content', 'social', 'video', 'image', 'audio', 'research', 'design'] as const;
export const listingStatuses = ['draft', 'published', 'retired'] as const;
export type ListingStatus = (typeof listingStatuses)[number];

export const listingIdParams = z.object({ listing_id: uuid.openapi({ description: 'Skill listing id (UUID).' }) });
export const slugParams = z.object({ slug: z.string().min(1).max(64).openapi({ description: 'The listing’s slug.' }) });

const person = z
  .object({ id: z.string(), first_name: z.string().nullable(), last_name: z.string().nullable(), email: z.string(), image_url: z.string() })
  .strict()
  .openapi('ListingPerson', {
    description:
      'The user’s name split on its first space (null parts when there is no name); `email` is `""` when unknown; `image_url` is a Gravatar identicon URL derived from the e-mail (`""` without one).',
  });

const listingFile = z.object({ path: z.string().min(1).max(500), content: z.string() }).strict();

/** Spec 2.6, every field always present. */
export const listingSchema = z
  .object({
    id: uuid,
    slug: z.string(),
    status: z.enum(listingStatuses),
    title: z.string(),
    summary: z.string(),
    categories: z.array(z.enum(listingCategories)),
    cover_url: z.string().nullable().openapi({ description: '`GET /skill-listings/{listing_id}/cover?v=…` while there is a cover.' }),
    examples: z.array(z.string()),
    author: z.string(),
    verified: z.boolean(),
    license: z.string().nullable(),
    source_url: z.string().nullable(),
    name: z.string(),
    description: z.string(),
    body: z.string(),
    version: z.number().int().openapi({ description: 'Starts at 1; one more for every change of name, description, body or files.' }),
    rank: z.number().int(),
    published_at: timestamp.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    files: z.array(listingFile),
    uses: z.number().int().openapi({ description: 'How often the listing was added to an organization.' }),
    created_by: person.nullable(),
    updated_by: person.nullable(),
  })
  .strict()
  .openapi('SkillListing');

export const listingEnvelope = z.object({ listing: listingSchema }).strict().openapi('SkillListingEnvelope');
export const listingPage = pageOf(listingSchema).openapi('SkillListingPage');

const slug = z
  .string()
  .max(64)
  .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be lower-case letters and digits in words joined by single hyphens');
const title = singleLine(120);
const summary = z.string().trim().max(2000);
const categories = z
  .array(z.enum(listingCategories))
  .max(listingCategories.length)
  .refine((list) => new Set(list).size === list.length, 'must not repeat a category');
const examples = z.array(z.string().trim().min(1).max(1000)).max(20);
const license = singleLine(100).nullable();
const sourceUrl = z
  .url({ protocol: /^https?$/ })
  .max(2000)
  .nullable();
const files = z
  .array(listingFile)
  .max(200)
  .refine((value) => JSON.stringify(value).length <= 1_000_000, 'must be at most 1 MB as JSON');

export const createListingBody = z
  .object({
    skill_id: uuid
      .openapi({ description: 'A custom skill the caller can read; its name, description, body and files are copied.' })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    slug: slug.optional().openapi({ description: 'Unique; made from the title (or the skill’s name) when omitted.' }),
    title: title.optional().openapi({ description: 'Defaults to the skill’s name.' }),
    summary: summary.optional().openapi({ description: 'Defaults to the skill’s description.' }),
    categories: categories.optional(),
    examples: examples.optional(),
    license: license.optional(),
    source_url: sourceUrl.optional(),
  })
  .strict()
  .openapi('CreateSkillListing');

export const updateListingBody = z
  .object({
    title: title.optional(),
    summary: summary.optional(),
    categories: categories.optional(),
    examples: examples.optional(),
    license: license.optional(),
    source_url: sourceUrl.optional(),
    name: singleLine(120).optional(),
    description: z.string().max(2000).optional(),
    body: z.string().max(200_000).optional(),
    files: files.optional(),
    verified: z.boolean().optional().openapi({ description: 'Operators only (403 naming the field otherwise).' }),
    rank: z.number().int().min(-1_000_000).max(1_000_000).optional().openapi({ description: 'Operators only (403 naming the field otherwise).' }),
  })
  .strict()
  .refine((value) => Object.keys(value).length > 0, 'send at least one field')
  .openapi({ minProperties: 1 })
  .openapi('UpdateSkillListing', { description: 'Sparse. A change of name, description, body or files makes a new `version`.' });

export const changeStatusBody = z
  .object({ status: z.enum(listingStatuses) })
  .strict()
  .openapi('ChangeSkillListingStatus');

export const listListingsQuery = z.object({
  status: z.enum(listingStatuses).optional().openapi({ description: 'Only listings in this status.' }),
  ...pageQuery,
});

export const catalogQuery = z.object({
  q: z.string().trim().min(1).max(200).optional().openapi({ description: 'Case-insensitive substring of the title, summary or name.' }),
  category: z.enum(listingCategories).optional().openapi({ description: 'Only listings in this category.' }),
  ...pageQuery,
});

export const addFromCatalogBody = z
  .object({ organization_id: z.string().min(1).max(64).openapi({ description: 'The organization that gets the skill.' }) })
  .strict()
  .openapi('AddSkillFromCatalog');

export const MAX_COVER_BYTES = 1024 * 1024;

export type CoverContentType = UploadImageType;

export const putCoverBody = imageUploadBody(MAX_COVER_BYTES).openapi('PutSkillListingCover');

export const coverQuery = imageUrlQuery('cover_url');
