// The skill catalog's public module: what other domains may import from it.
export { skillListingRoutes } from './routes.ts';
