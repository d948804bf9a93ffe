// Search over the organization's assets the caller can read, as a tool.
import type { Actor } from '../../access/index.ts';
import { searchAssets } from '../../assets/index.ts';
import { conversationProjects } from '../context/knowledge.ts';
import type { Deps } from '../../platform/deps.ts';
import { ASSET_SEARCH_TOOL } from './names.ts';
import { ToolError, type TurnTool } from './types.ts';

const DEFAULT_LIMIT = 5;
const MAX_LIMIT = 20;

export interface AssetHit {
  asset_id: string;
  title: string | null;
  type: string;
  /** Around the match, matched words in `<mark>` (the assets' full-text search). */
  snippet: string;
  /** The project the hit was found in first (the conversation's), or null: anywhere in the organization. */
  project_id: string | null;
}

/**
 * The one function the asset-search tool calls: the assets' full-text search (title and extracted
 * text, ranked; the list's access predicate in SQL, so an asset the caller cannot read never comes
 * back), scoped first to the projects the conversation is filed in — its knowledge — then to the
 * whole organization, each asset once.
 */
export async function searchReadableAssets(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  run: { organization_id: string; conversation_id: string },
  query: string,
  limit: number,
): Promise<AssetHit[]> {
  const projects = await conversationProjects(deps.db, run.conversation_id);
  const hits = new Map<string, AssetHit>();
  for (const projectId of [...projects.map((project) => project.id), null]) {
    if (hits.size >= limit) break;
    const page = await searchAssets(deps.db, actor, { organizationId: run.organization_id, q: query, projectId: projectId ?? undefined, limit });
    for (const item of page.items)
      if (!hits.has(item.id) && hits.size < limit)
        hits.set(item.id, { asset_id: item.id, title: item.title, type: item.type, snippet: item.snippet, project_id: projectId });
  }
  return [...hits.values()];
}

export const assetSearchTool: TurnTool = {
  name: ASSET_SEARCH_TOOL,
  description:
    "Searches the files and notes (assets) of this workspace that the user can read, by words in their title or extracted text (PDFs, documents, text files), those of the conversation's projects first; returns asset ids, titles, types and snippets, best match first. Free.",
  parameters: {
    type: 'object',
    properties: {
      query: { type: 'string', minLength: 1, maxLength: 200, description: 'Words to look for' },
      limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
    },
    required: ['query'],
    additionalProperties: false,
  },
  async run(args, { deps, actor, run }) {
    const query = typeof args.query === 'string' ? args.query.trim() : '';
    if (!query || query.length > 200) throw new ToolError('arguments: query: must be 1–200 characters of text');
    const limit = args.limit === undefined ? DEFAULT_LIMIT : Number(args.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new ToolError(`arguments: limit: must be an integer from 1 to ${MAX_LIMIT}`);
    const items = await searchReadableAssets(deps, actor, run, query, limit);
    return { content: JSON.stringify({ items }), credits: 0 };
  },
};
