// The skills domain's public module: what other domains may import from it.
export { type SkillRow, presentSkill, skillColumns } from './presenter.ts';
export { skillEnvelope, skillIdParams, skillSchema } from './schema.ts';
export { createSkillFromListing, type ListingCopy, updateSkillFromListing } from './listing-copy.ts';
export { getSkill, requireReadableSkill } from './service.ts';
