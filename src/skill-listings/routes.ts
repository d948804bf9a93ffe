import { presentPage } from '../core/pagination.ts';
import {
  allOf,
  anyOf,
  holder,
  linked,
  named,
  operator,
  recordIs,
  recordMember,
  resource,
  sent,
  setTo,
  signedIn,
  within,
  withFields,
} from '../http/authorize.ts';
import { answerImage } from '../http/image-answer.ts';
import { defineRoute, type AnyRoute, LARGE_BODY_LIMIT } from '../http/route.ts';
import { presentSkill, skillEnvelope, skillIdParams } from '../skills/index.ts';
import { addFromCatalog, getCatalogListing, listCatalog, updateFromListing } from './catalog.ts';
import { decodeCover, readCover, removeCover, replaceCover } from './cover.ts';
import { presentListing } from './presenter.ts';
import { readListing } from './rules.ts';
import {
  addFromCatalogBody,
  catalogQuery,
  changeStatusBody,
  coverQuery,
  createListingBody,
  listingEnvelope,
  listingIdParams,
  listingPage,
  listListingsQuery,
  putCoverBody,
  slugParams,
  updateListingBody,
} from './schema.ts';
import { changeStatus, createListing, listListings, updateListing } from './service.ts';

const tag = 'Skill catalog';
// Listings belong to no organization: their author and operators manage them; a published one is readable by all.
const anyListing = operator('any listing');
const authorOrOperator = anyOf(anyListing, holder('skill_listing', 'created_by_id'));
const listingReaders = anyOf(authorOrOperator, recordIs('skill_listing', 'status', 'published'));
/** Publishing rights, as they are at the moment: edit rights on the skill and `skill_listings.publish` in its organization. */
const publisher = named(
  'publisher',
  { record: 'skill_listing' },
  allOf(linked('skill_listing', ['skill'], 'edit'), recordMember('skill', 'skill_listings.publish')),
);

export const skillListingRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/skill-listings',
    operationId: 'createSkillListing',
    idempotent: {},
    summary: 'List a custom skill in the catalog (a draft, version 1)',
    description:
      'Copies the skill’s name, description, body and files. `title` defaults to the skill’s name and `summary` to its description; `author` is the caller’s name (else e-mail). Without `slug` one is made from the title (kebab case, `-2`, `-3`… when taken); a `slug` that is taken is 409 naming `slug`. 409 naming `files` when the skill’s files are not `[{path, content}]`.',
    tag,
    body: createListingBody,
    response: { status: 201, description: 'The new listing', schema: listingEnvelope },
    errors: [403, 404, 409],
    authorize: allOf(resource('skill', 'edit', 'skill_id', { in: 'body' }), recordMember('skill', 'skill_listings.publish')),
    handler: async ({ body, actor, deps }) => ({ listing: presentListing(await createListing(deps, actor, body)) }),
  }),
  defineRoute({
    method: 'get',
    path: '/skill-listings',
    operationId: 'listSkillListings',
    summary: 'List the caller’s own listings (operators: every listing), newest first',
    tag,
    query: listListingsQuery,
    response: { status: 200, description: 'A page of listings', schema: listingPage },
    authorize: signedIn('each caller sees the listings they authored; operators see every listing'),
    handler: async ({ query, actor, deps }) => presentPage(await listListings(deps.db, actor, query), presentListing),
  }),
  defineRoute({
    method: 'get',
    path: '/skill-listings/{listing_id}',
    operationId: 'getSkillListing',
    summary: 'Get a skill listing by id',
    tag,
    params: listingIdParams,
    response: { status: 200, description: 'The listing', schema: listingEnvelope },
    errors: [404],
    authorize: listingReaders,
    handler: async ({ params, actor, deps }) => ({ listing: presentListing(await readListing(deps.db, actor, params.listing_id)) }),
  }),
  defineRoute({
    method: 'patch',
    path: '/skill-listings/{listing_id}',
    operationId: 'updateSkillListing',
    summary: 'Change a draft or published listing',
    description:
      'A change of `name`, `description`, `body` or `files` makes a new `version`. `verified` and `rank` are for operators only (403 naming the field). 409 naming `status` for a retired listing; a published listing must keep a title, summary, category, name and body (409 naming the field), and changing it needs the author’s publishing rights as they are now — edit rights on the skill and `skill_listings.publish` (403 naming the first field sent; operators exempt).',
    tag,
    params: listingIdParams,
    body: updateListingBody,
    response: { status: 200, description: 'The changed listing', schema: listingEnvelope },
    errors: [403, 404, 409],
    authorize: withFields(allOf(authorOrOperator, anyOf(anyListing, recordIs('skill_listing', 'status', 'draft'), publisher)), {
      verified: sent(anyListing),
      rank: sent(anyListing),
    }),
    handler: async ({ params, body, actor, deps }) => ({ listing: presentListing(await updateListing(deps, actor, params.listing_id, body)) }),
  }),
  defineRoute({
    method: 'post',
    path: '/skill-listings/{listing_id}/status',
    operationId: 'changeSkillListingStatus',
    summary: 'Publish, retire or republish a listing',
    description:
      'Moves: draft → published, published → retired, retired → published; anything else is 409 naming `status` and the allowed moves. Publishing needs a title, a summary, at least one category, a name and a body (409 naming the missing field). An author publishing (or republishing) needs, at that moment, edit rights on the listing’s skill and `skill_listings.publish` in its organization (403 naming `status` otherwise); operators need neither. `published_at` is set by the first publication only.',
    tag,
    params: listingIdParams,
    body: changeStatusBody,
    response: { status: 200, description: 'The listing in its new status', schema: listingEnvelope },
    errors: [403, 404, 409],
    authorize: withFields(authorOrOperator, { status: setTo('published', anyOf(anyListing, publisher)) }),
    handler: async ({ params, body, actor, deps }) => ({ listing: presentListing(await changeStatus(deps, actor, params.listing_id, body.status)) }),
  }),
  defineRoute({
    method: 'post',
    path: '/skill-listings/{listing_id}/cover',
    operationId: 'putSkillListingCover',
    summary: 'Set or replace the listing’s cover image',
    description:
      'PNG, JPEG, WebP or GIF, base64-encoded in `data`, at most 1 MiB decoded. The bytes must be an image of the declared `content_type` (400 naming `data` otherwise; 413 when too large). 409 for a retired listing.',
    tag,
    params: listingIdParams,
    body: putCoverBody,
    bodyLimit: LARGE_BODY_LIMIT,
    response: { status: 200, description: 'The listing with its new `cover_url`', schema: listingEnvelope },
    errors: [403, 404, 409, 413],
    authorize: authorOrOperator,
    handler: async ({ params, body, actor, deps }) => {
      const bytes = decodeCover(body.content_type, body.data);
      return { listing: presentListing(await replaceCover(deps, actor, params.listing_id, body.content_type, bytes)) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/skill-listings/{listing_id}/cover',
    operationId: 'deleteSkillListingCover',
    summary: 'Remove the listing’s cover image',
    description: 'Idempotent; the listing then has `cover_url: null`.',
    tag,
    params: listingIdParams,
    response: { status: 204, description: 'The cover is removed (or there was none)' },
    errors: [403, 404],
    authorize: authorOrOperator,
    handler: ({ params, actor, deps }) => removeCover(deps, actor, params.listing_id),
  }),
  defineRoute({
    method: 'get',
    path: '/skill-listings/{listing_id}/cover',
    operationId: 'getSkillListingCover',
    summary: 'The listing’s cover image',
    description: 'Answers the image bytes with their `Content-Type` (image/png, image/jpeg, image/webp or image/gif); 404 when there is no cover.',
    tag,
    params: listingIdParams,
    query: coverQuery,
    response: { status: 200, description: 'The image bytes' },
    errors: [404],
    authorize: listingReaders,
    handler: async ({ params, actor, deps, ctx }) => answerImage(ctx, await readCover(deps, actor, params.listing_id)),
  }),
  defineRoute({
    method: 'get',
    path: '/skill-catalog',
    operationId: 'listSkillCatalog',
    summary: 'Browse the published skill listings',
    description: 'Ordered by `rank` (highest first), then `uses` (most first), then id; keyset paged.',
    tag,
    query: catalogQuery,
    response: { status: 200, description: 'A page of published listings', schema: listingPage },
    authorize: signedIn('the catalog shows published listings to everyone'),
    handler: async ({ query, deps }) => presentPage(await listCatalog(deps.db, query), presentListing),
  }),
  defineRoute({
    method: 'get',
    path: '/skill-catalog/{slug}',
    operationId: 'getSkillCatalogListing',
    summary: 'Get a published listing by slug',
    tag,
    params: slugParams,
    response: { status: 200, description: 'The listing', schema: listingEnvelope },
    errors: [404],
    authorize: signedIn('the catalog shows published listings to everyone; any other slug is 404'),
    handler: async ({ params, deps }) => ({ listing: presentListing(await getCatalogListing(deps.db, params.slug)) }),
  }),
  defineRoute({
    method: 'post',
    path: '/skill-catalog/{slug}/add',
    operationId: 'addSkillFromCatalog',
    idempotent: {},
    summary: 'Add a published listing to an organization as a community skill',
    description:
      'The caller owns the new skill (`source: community`, `listing_id`, `listing_version`); the listing’s `uses` grows by one. 404 for a slug that is not published; 409 when a live skill of the organization has the name.',
    tag,
    params: slugParams,
    body: addFromCatalogBody,
    response: { status: 201, description: 'The new skill', schema: skillEnvelope },
    errors: [403, 404, 409],
    authorize: within('body', 'resources.create'),
    handler: async ({ params, body, actor, deps }) => ({ skill: presentSkill(await addFromCatalog(deps, actor, params.slug, body.organization_id)) }),
  }),
  defineRoute({
    method: 'post',
    path: '/skills/{skill_id}/listing-update',
    operationId: 'updateSkillFromListing',
    summary: 'Bring a skill added from the catalog to its listing’s latest version',
    description:
      'A new version of the skill with the listing’s content; the previous content stays in the version history (restorable). 409 naming `listing_id` when the skill was not added from the catalog, `listing_version` when it is already current.',
    tag,
    params: skillIdParams,
    response: { status: 200, description: 'The skill at its new version', schema: skillEnvelope },
    errors: [403, 404, 409],
    authorize: resource('skill', 'edit', 'skill_id'),
    handler: async ({ params, actor, deps }) => ({ skill: presentSkill(await updateFromListing(deps, actor, params.skill_id)) }),
  }),
];
