// The names of a turn's tools: built-in ones, and a connector's tools under the connector's namespace.
import type { Knex } from 'knex';
import { type ConnectorRow, usableMcpConnectors } from '../../connectors/index.ts';
import { badRequest } from '../../core/errors.ts';
import type { ReadOperations } from '../../platform/deps.ts';

/** What chat-completions APIs accept as a function name. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Narrowings of a turn's tools (the run's `tools`, its conversation's, its projects'): the names all of them allow; null when none narrows. */
export function allowedToolNames(narrowings: readonly (readonly string[] | null)[]): Set<string> | null {
  let allowed: Set<string> | null = null;
  for (const names of narrowings) {
    if (names === null) continue;
    allowed = allowed === null ? new Set(names) : new Set(names.filter((name) => allowed!.has(name)));
  }
  return allowed;
}

export const ASSET_SEARCH_TOOL = 'search_assets';
export const IMAGE_TOOL = 'generate_image';

/** Separates a connector's namespace from its tool's name. */
const NAMESPACE_SEPARATOR = '__';

/** Built-in tools: every metered read of the catalog (social, web search, read_url), the asset search and image generation. */
export const builtInToolNames = (reads: ReadOperations): string[] => [...reads.keys(), ASSET_SEARCH_TOOL, IMAGE_TOOL];

/**
 * Each connector's namespace: its name in lowercase letters, digits and `_` (at most 24), in
 * creation order; a later connector whose name folds to a taken namespace gets its id's first
 * characters appended, so names stay stable as connectors are added.
 */
export function connectorNamespaces(connectors: readonly ConnectorRow[]): Map<string, string> {
  const taken = new Set<string>();
  const namespaces = new Map<string, string>();
  for (const connector of [...connectors].sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || a.id.localeCompare(b.id))) {
    const base =
      connector.name
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '_')
        .replace(/^_+|_+$/g, '')
        .slice(0, 24) || 'connector';
    const namespace = taken.has(base) ? `${base}_${connector.id.slice(0, 6)}` : base;
    taken.add(namespace);
    namespaces.set(connector.id, namespace);
  }
  return namespaces;
}

export const connectorToolName = (namespace: string, tool: string) => `${namespace}${NAMESPACE_SEPARATOR}${tool}`;

/** The namespace part of a tool name, if it names a connector's tool. */
export const namespaceOf = (name: string): string | null => {
  const at = name.indexOf(NAMESPACE_SEPARATOR);
  return at > 0 ? name.slice(0, at) : null;
};

/**
 * A run's `tools`: each a built-in tool or a tool of an MCP connector of the organization the
 * caller can use (by its namespace; the connector lists its tools when the turn runs); else 400
 * naming the entry.
 */
export async function checkToolNames(
  db: Knex,
  reads: ReadOperations,
  organizationId: string,
  userId: string,
  names: readonly string[],
  field = 'tools',
): Promise<void> {
  const builtIn = new Set(builtInToolNames(reads));
  const needsConnectors = names.some((name) => !builtIn.has(name));
  const namespaces = needsConnectors ? new Set(connectorNamespaces(await usableMcpConnectors({ db }, organizationId, userId)).values()) : new Set<string>();
  names.forEach((name, i) => {
    if (builtIn.has(name)) return;
    const namespace = namespaceOf(name);
    if (namespace === null || !namespaces.has(namespace))
      throw badRequest(
        `${field}[${i}]: "${name}" is neither a built-in tool nor <namespace>__<tool> of an MCP connector of this organization that you can use`,
        [field, i],
      );
  });
}
