// The tools a turn offers: the built-in ones and the connectors', narrowed by the run's `tools`.
import type { Deps } from '../../platform/deps.ts';
import type { RunRow } from '../run-row.ts';
import { assetSearchTool } from './asset-search.ts';
import { connectorTools } from './connector-tools.ts';
import { namespaceOf } from './names.ts';
import { readTool } from './reads.ts';
import type { TurnTool } from './types.ts';

export async function turnTools(deps: Deps, run: RunRow): Promise<Map<string, TurnTool>> {
  const only = run.tools === null ? null : new Set(run.tools);
  const builtIn = [...[...deps.reads.values()].map(readTool), assetSearchTool];
  const namespaces = only === null ? null : new Set([...only].map(namespaceOf).filter((namespace) => namespace !== null));
  const fromConnectors =
    namespaces !== null && namespaces.size === 0
      ? []
      : await connectorTools(deps, run.organization_id, run.user_id, namespaces === null ? null : (namespace) => namespaces.has(namespace));
  const tools = new Map<string, TurnTool>();
  for (const tool of [...builtIn, ...fromConnectors]) if (only === null || only.has(tool.name)) tools.set(tool.name, tool);
  return tools;
}
