/**
 * Connectors — the public module (import from here only): organization-level connectors and each
 * user's own encrypted credential for one. `connectorSecret` decrypts a user's secret for the code
 * that calls a connector on their behalf (never for a response or a log line).
 */
export { connectorSecret, eraseCredentialsOfRemovedMember, MANAGE_CONNECTORS } from './service.ts';
export type { ConnectorRow } from './presenter.ts';
// The sealing of secrets at rest, shared with webhook endpoints' signing secrets (same keys, same rotation).
export { openBound, resolveKeyring, sealBound, type Keyring, type SealedSecret } from './secrets.ts';
// The SSRF policy for a URL saved now and fetched later (webhook endpoints check theirs with it too).
export { checkConnectorUrl as checkOutboundUrl } from './url-policy.ts';
export {
  type ConnectorTool,
  cachedMcpTools,
  callConnectorTool,
  ConnectorCallError,
  refreshMcpTools,
  usableMcpConnectors,
} from './mcp.ts';
// OAuth connections (MCP authorization): the revocation job, the member-removal listener, the event's object.
export { connectionRevocationJob } from './oauth/jobs.ts';
export { revokeConnectionsOfRemovedMember } from './oauth/service.ts';
export { connectorConnectionEventSchema } from './oauth/schema.ts';
