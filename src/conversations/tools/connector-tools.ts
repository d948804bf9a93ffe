// The tools of the organization's MCP connectors the caller can use, namespaced by connector.
import {
  type ConnectorRow,
  type ConnectorTool,
  cachedMcpTools,
  callConnectorTool,
  ConnectorCallError,
  refreshMcpTools,
  usableMcpConnectors,
} from '../../connectors/index.ts';
import type { Deps } from '../../platform/deps.ts';
import { connectorNamespaces, connectorToolName, TOOL_NAME } from './names.ts';
import { ToolError, type TurnTool } from './types.ts';

/**
 * Every tool of every usable MCP connector of the run's organization (only its own: a connector is
 * never offered in another organization's conversation), from the caller's cached list, listed
 * again when it is missing or older than CHAT_CONNECTOR_TOOLS_TTL_SECONDS. A connector that cannot
 * list its tools now offers none in this turn. `wanted` limits which namespaces are listed.
 */
export async function connectorTools(
  deps: Pick<Deps, 'config' | 'db' | 'log'>,
  organizationId: string,
  userId: string,
  wanted: ((namespace: string) => boolean) | null,
): Promise<TurnTool[]> {
  const connectors = await usableMcpConnectors(deps, organizationId, userId);
  const namespaces = connectorNamespaces(connectors);
  const lists = await Promise.all(
    connectors.map(async (connector) => {
      const namespace = namespaces.get(connector.id)!;
      if (wanted && !wanted(namespace)) return [];
      try {
        const tools =
          (await cachedMcpTools(deps, connector.id, userId, deps.config.CHAT_CONNECTOR_TOOLS_TTL_SECONDS)) ??
          (await refreshMcpTools(deps, connector, userId, AbortSignal.timeout(deps.config.CHAT_TOOL_TIMEOUT_MS)));
        return tools.map((tool) => asTurnTool(connector, namespace, tool)).filter((tool) => TOOL_NAME.test(tool.name));
      } catch (error) {
        deps.log.warn({ err: error, connector_id: connector.id }, 'chat tools: the connector did not list its tools');
        return [];
      }
    }),
  );
  return lists.flat();
}

function asTurnTool(connector: ConnectorRow, namespace: string, tool: ConnectorTool): TurnTool {
  return {
    name: connectorToolName(namespace, tool.name),
    description: `${tool.description} (Tool "${tool.name}" of the connector "${connector.name}".)`.trim(),
    parameters: tool.input_schema,
    needsApproval: connector.needs_approval || connector.approval_tools.includes(tool.name),
    async run(args, { deps, run, signal, deadline }) {
      try {
        const content = await callConnectorTool(deps, connector, run.user_id, tool.name, args, AbortSignal.any([signal, deadline]));
        return { content, credits: 0 };
      } catch (error) {
        if (signal.aborted) throw error;
        if (error instanceof ConnectorCallError) throw new ToolError(error.message);
        throw error;
      }
    },
  };
}
