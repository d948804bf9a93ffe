import type { AnyRoute } from './route.ts';

/** Builds the `Location` of a created resource from the request's path parameters and the answer. */
export type Locate = (params: Record<string, string> | undefined, answer: unknown) => string | undefined;

const parametersOf = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);

/** The created resource's id: the answer's `id`, or that of the one resource it is wrapped in (`{organization: {id}}`). */
function idOf(answer: unknown): string | undefined {
  if (typeof answer !== 'object' || answer === null) return undefined;
  const record = answer as Record<string, unknown>;
  if (typeof record.id === 'string') return record.id;
  const keys = Object.keys(record);
  const inner = keys.length === 1 ? record[keys[0]!] : undefined;
  return typeof inner === 'object' && inner !== null && typeof (inner as { id?: unknown }).id === 'string' ? (inner as { id: string }).id : undefined;
}

/**
 * Where each create's resource can be read (CONVENTIONS §3: `201` with a `Location` header): the
 * GET operation answering the same schema, its path filled from the request's path parameters and
 * the new id (the one parameter the request did not have). Derived from the route table, so a new
 * create with a readable resource gets its Location without saying so; a route may declare its own.
 */
export function locations(routes: readonly AnyRoute[]): Map<AnyRoute, Locate> {
  const found = new Map<AnyRoute, Locate>();
  const reads = routes.filter((route) => route.method === 'get' && route.response.schema);
  for (const route of routes) {
    if (route.response.status !== 201) continue;
    if (route.location) {
      found.set(route, route.location);
      continue;
    }
    const known = new Set(parametersOf(route.path));
    const candidates = reads.filter(
      (read) => read.response.schema === route.response.schema && parametersOf(read.path).filter((name) => !known.has(name)).length <= 1,
    );
    // The item under the create's own path first (`POST /assets` → `GET /assets/{asset_id}`).
    const read = candidates.find((candidate) => candidate.path.startsWith(`${route.path}/`)) ?? candidates[0];
    if (!read) continue;
    // A path ending in a parameter names the new resource by its id (a fork of a conversation is
    // `/conversations/{new id}`); one ending in a word is a sub-resource of the request's (`…/run`).
    const own = read.path.endsWith('}') ? parametersOf(read.path).at(-1) : undefined;
    found.set(route, (params, answer) => {
      const id = idOf(answer);
      let missing = false;
      const path = read.path.replace(/\{(\w+)\}/g, (_, name: string) => {
        const value = name === own || !known.has(name) ? id : params?.[name];
        if (value === undefined) missing = true;
        return encodeURIComponent(value ?? '');
      });
      return missing ? undefined : path;
    });
  }
  return found;
}
