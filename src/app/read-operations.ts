// Composition root: every metered read by name — the social operations (spec §4.4), web search and
// page reading. Routes are built from the same declarations (src/social/routes.ts, src/search/routes.ts);
// workers find an accepted call's operation here (Deps.reads).
import type { ReadOperations } from '../platform/deps.ts';
import { searchOperations } from '../search/index.ts';
import { socialOperations } from '../social/index.ts';

export function createReadOperations(): ReadOperations {
  const operations = new Map([...socialOperations, ...searchOperations].map((operation) => [operation.name, operation]));
  if (operations.size !== socialOperations.length + searchOperations.length) throw new Error('two metered reads share a name');
  return operations;
}
