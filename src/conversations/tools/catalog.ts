// The tools a turn offers: the built-in ones and the connectors', narrowed by the run's `tools`.
// (Image generation is not offered in a scheduled task's turn: see below.)
import type { Deps } from '../../platform/deps.ts';
import type { RunRow } from '../run-row.ts';
import { assetSearchTool } from './asset-search.ts';
import { connectorTools } from './connector-tools.ts';
import { imageTool } from './image.ts';
import { namespaceOf } from './names.ts';
import { readTool } from './reads.ts';
import type { TurnTool } from './types.ts';

export async function turnTools(deps: Deps, run: RunRow): Promise<Map<string, TurnTool>> {
  const only = run.tools === null ? null : new Set(run.tools);
  const namespaces = only === null ? null : new Set([...only].map(namespaceOf).filter((namespace) => namespace !== null));
  const [conversation, fromConnectors] = await Promise.all([
    deps.db('conversations').where({ id: run.conversation_id }).first('schedule_id') as Promise<{ schedule_id: string | null } | undefined>,
    namespaces !== null && namespaces.size === 0
      ? []
      : connectorTools(deps, run.organization_id, run.user_id, namespaces === null ? null : (namespace) => namespaces.has(namespace)),
  ]);
  // A scheduled task's turn has a job waiting on its end (the task's finish): it cannot end early to wait for a generation.
  const scheduled = Boolean(conversation?.schedule_id);
  const builtIn = [...[...deps.reads.values()].map(readTool), assetSearchTool, ...(scheduled ? [] : [imageTool])];
  const tools = new Map<string, TurnTool>();
  for (const tool of [...builtIn, ...fromConnectors]) if (only === null || only.has(tool.name)) tools.set(tool.name, tool);
  return tools;
}
