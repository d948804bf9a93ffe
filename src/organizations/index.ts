// The organizations domain's public module: what other domains may import from it. It owns the
// `organizations` table: other domains read and lock organizations only through ./lookups.ts.
export {
  isLiveOrganization,
  liveOrganizations,
  lockOrganization,
  organizationCreatedAt,
  organizationExists,
  organizationName,
  organizationNames,
} from './lookups.ts';
export { normaliseSlug } from './slug.ts';
