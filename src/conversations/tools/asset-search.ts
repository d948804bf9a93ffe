// Search over the organization's assets the caller can read, as a tool.
import type { Actor } from '../../access/index.ts';
import { type AssetFilters, type AssetRow, listAssets } from '../../assets/index.ts';
import type { Deps } from '../../platform/deps.ts';
import { ASSET_SEARCH_TOOL } from './names.ts';
import { ToolError, type TurnTool } from './types.ts';

const SNIPPET_CHARS = 300;
const DEFAULT_LIMIT = 5;
const MAX_LIMIT = 20;

export interface AssetHit {
  asset_id: string;
  title: string | null;
  type: string;
  snippet: string;
}

/** The text around the first match of `query` in `text` (or its start). */
function snippetOf(text: string | null, query: string): string {
  if (!text) return '';
  const at = text.toLowerCase().indexOf(query.toLowerCase());
  const start = Math.max(0, at - SNIPPET_CHARS / 3);
  return `${start > 0 ? '…' : ''}${text
    .slice(start, start + SNIPPET_CHARS)
    .replace(/\s+/g, ' ')
    .trim()}${start + SNIPPET_CHARS < text.length ? '…' : ''}`;
}

/**
 * The one function the asset-search tool calls: live assets of the organization the caller can
 * read (the list's access predicate, in SQL), matching `query` in title or content, newest first.
 * Swap for the assets domain's full-text `searchAssets` once it lands; the tool stays as it is.
 */
export async function searchReadableAssets(deps: Deps, actor: Actor, organizationId: string, query: string, limit: number): Promise<AssetHit[]> {
  const page = await listAssets(deps, actor, { organization_id: organizationId, search: query, limit } as AssetFilters);
  return page.items.map((asset: AssetRow) => ({
    asset_id: asset.id,
    title: asset.title,
    type: asset.type,
    snippet: snippetOf(asset.content ?? asset.title, query),
  }));
}

export const assetSearchTool: TurnTool = {
  name: ASSET_SEARCH_TOOL,
  description:
    'Searches the files and notes (assets) of this workspace that the user can read, by words in their title or text; returns asset ids, titles, types and snippets. Free.',
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
    const items = await searchReadableAssets(deps, actor, run.organization_id, query, limit);
    return { content: JSON.stringify({ items }), credits: 0 };
  },
};
