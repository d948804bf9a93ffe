// The organizations domain's public module: what other domains may import from it.
export { normaliseSlug } from './slug.ts';
