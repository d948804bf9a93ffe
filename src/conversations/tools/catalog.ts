// The tools a turn offers: the built-in ones and the connectors', narrowed by the run's `tools`, its
// conversation's `tools` and the `chat_tools` of the projects holding it (a tool all of them allow).
// (Image generation is not offered in a scheduled task's turn: see below.)
import type { Deps } from '../../platform/deps.ts';
import type { RunRow } from '../run-row.ts';
import { assetSearchTool } from './asset-search.ts';
import { connectorTools } from './connector-tools.ts';
import { imageTool } from './image.ts';
import { conversationProjects } from '../context/knowledge.ts';
import { allowedToolNames, ASSET_SEARCH_TOOL, IMAGE_TOOL, namespaceOf } from './names.ts';
import { readTool } from './reads.ts';
import type { TurnTool } from './types.ts';
import { toolsTokens } from '../context/window.ts';
import { offeredTools } from './loop.ts';

export async function turnTools(deps: Deps, run: RunRow): Promise<Map<string, TurnTool>> {
  // The connectors are listed beside the settings' reads (only those the run's own `tools` names, if any); the settings narrow after.
  const namespaces = run.tools === null ? null : new Set(run.tools.map(namespaceOf).filter((namespace) => namespace !== null));
  const [conversation, projects, fromConnectors] = await Promise.all([
    deps.db('conversations').where({ id: run.conversation_id }).first('schedule_id', 'tools', 'approval_tools') as Promise<
      { schedule_id: string | null; tools: string[] | null; approval_tools: string[] } | undefined
    >,
    conversationProjects(deps.db, run.conversation_id),
    namespaces !== null && namespaces.size === 0
      ? []
      : connectorTools(deps, run.organization_id, run.user_id, namespaces === null ? null : (namespace) => namespaces.has(namespace)),
  ]);
  const only = allowedToolNames([run.tools, conversation?.tools ?? null, ...projects.map((project) => project.chat_tools)]);
  // A scheduled task's turn has a job waiting on its end (the task's finish): it cannot end early to wait for a generation.
  const scheduled = Boolean(conversation?.schedule_id);
  const builtIn = [...[...deps.reads.values()].map(readTool), assetSearchTool, ...(scheduled ? [] : [imageTool])];
  // Tools the conversation wants approved call by call (beside those their connector marks).
  const approval = new Set(conversation?.approval_tools ?? []);
  const tools = new Map<string, TurnTool>();
  for (const tool of [...builtIn, ...fromConnectors])
    if (only === null || only.has(tool.name)) tools.set(tool.name, approval.has(tool.name) ? { ...tool, needsApproval: true } : tool);
  return tools;
}

/** At most this share of the model's window goes to the definitions of the tools offered. */
const TOOLS_SHARE = 0.25;
/** Offered first when not all fit: the workspace's own tools (the social reads and connectors' follow). */
const WORKSPACE_TOOLS = new Set([ASSET_SEARCH_TOOL, IMAGE_TOOL, 'search', 'read_url']);

/**
 * The tools a turn can afford to offer: their definitions take room in the request, and 56 built-in
 * tools alone are ~10k tokens — more than a small model's whole window. When they do not all fit in
 * TOOLS_SHARE of the window, the ones the answered message names come first, then the workspace's
 * own, then the rest in catalog order, as many as fit; the rest are left out of this turn.
 */
export function affordableTools(tools: ReadonlyMap<string, TurnTool>, window: number, asked: string): Map<string, TurnTool> {
  const budget = Math.floor(window * TOOLS_SHARE);
  const rank = (tool: TurnTool) => (asked.includes(tool.name) ? 0 : WORKSPACE_TOOLS.has(tool.name) ? 1 : 2);
  const ranked = [...tools.values()].sort((a, b) => rank(a) - rank(b));
  const kept = new Map<string, TurnTool>();
  let used = 0;
  for (const tool of ranked) {
    const cost = toolsTokens(offeredTools(new Map([[tool.name, tool]])));
    if (used + cost > budget) continue;
    used += cost;
    kept.set(tool.name, tool);
  }
  return kept;
}
