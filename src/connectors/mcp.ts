/**
 * MCP connectors as tool sources: a connector of type `mcp` is a remote Model Context Protocol
 * server, reached with the official SDK's Streamable HTTP client through the SSRF guard
 * (src/net/guarded-fetch.ts) with the user's own credential. Its tool list is cached per user
 * (what a server lists may depend on who asks) and refreshed on demand or when stale.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Actor } from '../access/index.ts';
import { AppError, conflict } from '../core/errors.ts';
import { parseAllowlist } from '../net/address-policy.ts';
import { guardedFetch } from '../net/guarded-fetch.ts';
import type { Deps } from '../platform/deps.ts';
import type { ConnectorRow } from './presenter.ts';
import { connectorSecret, getConnector } from './service.ts';

export interface ConnectorTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/** A connector call that failed: the message names the connector and, for an HTTP refusal, its status. */
export class ConnectorCallError extends Error {
  readonly status: number | null;
  constructor(message: string, status: number | null) {
    super(message);
    this.status = status;
    this.name = 'ConnectorCallError';
  }
}

/** The headers that carry a user's secret, by the connector's auth scheme (`header` sends `X-API-Key`). */
function authHeaders(connector: ConnectorRow, secret: string | null): Record<string, string> {
  if (secret === null || connector.auth_scheme === 'none') return {};
  if (connector.auth_scheme === 'bearer') return { authorization: `Bearer ${secret}` };
  if (connector.auth_scheme === 'basic') return { authorization: `Basic ${Buffer.from(secret, 'utf8').toString('base64')}` };
  return { 'x-api-key': secret };
}

/** Opens a session with the connector's server, runs `work`, closes the session (and its pinned sockets) whatever happens. */
async function withSession<T>(
  deps: Pick<Deps, 'config'>,
  connector: ConnectorRow,
  secret: string | null,
  signal: AbortSignal | undefined,
  work: (client: Client) => Promise<T>,
): Promise<T> {
  if (connector.url === null) throw new ConnectorCallError(`connector "${connector.name}": has no url`, null);
  const guard = guardedFetch(parseAllowlist(deps.config.OUTBOUND_ALLOWLIST));
  const transport = new StreamableHTTPClientTransport(new URL(connector.url), {
    fetch: guard.fetch,
    requestInit: { headers: authHeaders(connector, secret) },
  });
  const client = new Client({ name: 'workspace-platform', version: '1' });
  try {
    await client.connect(transport, { ...(signal && { signal }) });
    return await work(client);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    const status = typeof (error as { code?: unknown }).code === 'number' && (error as { code: number }).code > 0 ? (error as { code: number }).code : null;
    const said = (error as Error).message;
    throw new ConnectorCallError(
      status === null ? `connector "${connector.name}": ${said}` : `connector "${connector.name}": the MCP server answered ${status} (${said})`,
      status,
    );
  } finally {
    await client.close().catch(() => undefined);
    await guard.close();
  }
}

/** The server's tools (every page of `tools/list`). */
export function listMcpTools(deps: Pick<Deps, 'config'>, connector: ConnectorRow, secret: string | null, signal?: AbortSignal): Promise<ConnectorTool[]> {
  return withSession(deps, connector, secret, signal, async (client) => {
    const tools: ConnectorTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { ...(signal && { signal }) });
      for (const tool of page.tools)
        tools.push({ name: tool.name, description: tool.description ?? '', input_schema: tool.inputSchema as Record<string, unknown> });
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  });
}

/** Calls one tool; its text content joined. A result the server marks `isError` is a failure with that text. */
export function callMcpTool(
  deps: Pick<Deps, 'config'>,
  connector: ConnectorRow,
  secret: string | null,
  name: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<string> {
  return withSession(deps, connector, secret, signal, async (client) => {
    const result = await client.callTool({ name, arguments: args }, undefined, { ...(signal && { signal }) });
    const parts = Array.isArray(result.content) ? (result.content as { type: string; text?: string }[]) : [];
    const text = parts.map((part) => (part.type === 'text' ? (part.text ?? '') : JSON.stringify(part))).join('\n');
    const answer = text || JSON.stringify(result.structuredContent ?? {});
    if (result.isError) throw new ConnectorCallError(`connector "${connector.name}": tool ${name} failed: ${answer}`, null);
    return answer;
  });
}

/** The live `mcp` connectors of the organization the user can use: those needing no secret, and those the user has one for. */
export async function usableMcpConnectors(deps: Pick<Deps, 'db'>, organizationId: string, userId: string): Promise<ConnectorRow[]> {
  return (await deps
    .db('connectors as c')
    .where({ 'c.organization_id': organizationId, 'c.type': 'mcp' })
    .whereNull('c.deleted_at')
    .whereNotNull('c.url')
    .where((q) =>
      q
        .where('c.auth_scheme', 'none')
        .orWhereExists((sub) =>
          sub.select(deps.db.raw('1')).from('connector_credentials as cc').whereRaw('cc.connector_id = c.id').where('cc.user_id', userId),
        ),
    )
    .orderBy('c.created_at')
    .select('c.*')) as ConnectorRow[];
}

/** The user's cached tool list of the connector, if refreshed within `maxAgeSeconds`. */
export async function cachedMcpTools(deps: Pick<Deps, 'db'>, connectorId: string, userId: string, maxAgeSeconds: number): Promise<ConnectorTool[] | null> {
  const row = (await deps
    .db('connector_tool_lists')
    .where({ connector_id: connectorId, user_id: userId })
    .whereRaw('refreshed_at > now() - make_interval(secs => ?)', [maxAgeSeconds])
    .first('tools')) as { tools: ConnectorTool[] } | undefined;
  return row?.tools ?? null;
}

/** Lists the connector's tools with the user's credential and caches the list (replacing the last one). */
export async function refreshMcpTools(
  deps: Pick<Deps, 'db' | 'config'>,
  connector: ConnectorRow,
  userId: string,
  signal?: AbortSignal,
): Promise<ConnectorTool[]> {
  const secret = connector.auth_scheme === 'none' ? null : await connectorSecret(deps, connector.id, userId);
  const tools = await listMcpTools(deps, connector, secret, signal);
  await deps
    .db('connector_tool_lists')
    .insert({ connector_id: connector.id, user_id: userId, tools: JSON.stringify(tools) })
    .onConflict(['connector_id', 'user_id'])
    .merge({ tools: JSON.stringify(tools), refreshed_at: deps.db.fn.now() });
  return tools;
}

/** Calls the connector's tool on the user's behalf, with the user's stored credential. */
export async function callConnectorTool(
  deps: Pick<Deps, 'db' | 'config'>,
  connector: ConnectorRow,
  userId: string,
  name: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<string> {
  const secret = connector.auth_scheme === 'none' ? null : await connectorSecret(deps, connector.id, userId);
  if (connector.auth_scheme !== 'none' && secret === null) throw new ConnectorCallError(`connector "${connector.name}": you have no credential for it`, null);
  return callMcpTool(deps, connector, secret, name, args, signal);
}

/**
 * POST /connectors/{connector_id}/refresh: any member of its organization, with their own
 * credential. 409 for a deleted connector, one that is not `mcp`, or a missing credential; 502
 * naming the server's answer when listing fails.
 */
export async function refreshConnectorTools(deps: Pick<Deps, 'config' | 'db'>, actor: Actor, connectorId: string): Promise<ConnectorTool[]> {
  const connector = await getConnector(deps, actor, connectorId);
  if (connector.deleted_at) throw conflict('the connector is deleted');
  if (connector.type !== 'mcp') throw conflict(`type: only mcp connectors list tools (this one is ${connector.type})`, ['type']);
  if (connector.url === null) throw conflict('url: the connector has no url', ['url']);
  if (connector.auth_scheme !== 'none' && (await connectorSecret(deps, connector.id, actor.userId)) === null)
    throw conflict('credential: you have no credential for this connector; set one with PATCH /connector-credentials/{connector_id}', ['credential']);
  try {
    return await refreshMcpTools(deps, connector, actor.userId, AbortSignal.timeout(deps.config.CHAT_TOOL_TIMEOUT_MS));
  } catch (error) {
    if (error instanceof ConnectorCallError) throw new AppError('upstream_failed', error.message);
    throw error;
  }
}
