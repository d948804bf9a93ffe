import { presentPage } from '../core/pagination.ts';
import { listing, recordMember, within } from '../http/authorize.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { refreshConnectorTools } from './mcp.ts';
import { connectorOAuthRoutes } from './oauth/routes.ts';
import { presentConnector, presentCredential } from './presenter.ts';
import {
  connectorCredentialEnvelope,
  connectorCredentialPage,
  connectorEnvelope,
  connectorIdParams,
  connectorPage,
  connectorToolsSchema,
  createConnectorBody,
  listConnectorsQuery,
  setConnectorCredentialBody,
  updateConnectorBody,
} from './schema.ts';
import {
  createConnector,
  deleteConnector,
  deleteCredential,
  getConnector,
  listConnectors,
  listCredentials,
  setCredential,
  updateConnector,
} from './service.ts';

const tag = 'Connectors';
const aMember = recordMember('connector');
const aManager = recordMember('connector', 'connectors.manage');

export { connectorOAuthCallbackRoutes } from './oauth/routes.ts';

export const connectorRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/connectors',
    operationId: 'createConnector',
    idempotent: {},
    summary: 'Create a connector of the organization',
    description:
      'Organization-level settings: `type` (`http`, `mcp`, `openapi`), `name` (unique among the live connectors of the organization, case-insensitive: 409), `url` (http or https; an address that is loopback, private, link-local or otherwise not public, or a name resolving to one, is refused with 400 on `url` unless `OUTBOUND_ALLOWLIST` opens it) and `auth_scheme` (`none` by default, `bearer`, `header`, `basic`). Secrets are not set here: each user sets their own (`PATCH /connector-credentials/{connector_id}`).',
    tag,
    body: createConnectorBody,
    response: { status: 201, description: 'The connector', schema: connectorEnvelope },
    errors: [403, 409],
    authorize: within('body', 'connectors.manage'),
    handler: async ({ body, actor, deps }) => ({ connector: presentConnector(await createConnector(deps, actor, body)) }),
  }),
  defineRoute({
    method: 'get',
    path: '/connectors',
    operationId: 'listConnectors',
    summary: 'List the connectors of an organization',
    description: 'Live connectors, newest first, keyset paged. Any member may list them; a caller who is not a member gets an empty page.',
    tag,
    query: listConnectorsQuery,
    response: { status: 200, description: 'A page of connectors', schema: connectorPage },
    authorize: listing(),
    handler: async ({ query, actor, deps }) => presentPage(await listConnectors(deps, actor, query), presentConnector),
  }),
  defineRoute({
    method: 'get',
    path: '/connectors/{connector_id}',
    operationId: 'getConnector',
    summary: 'Get a connector (also a deleted one, showing `deleted_at`)',
    tag,
    params: connectorIdParams,
    response: { status: 200, description: 'The connector', schema: connectorEnvelope },
    errors: [404],
    authorize: aMember,
    handler: async ({ params, actor, deps }) => ({ connector: presentConnector(await getConnector(deps, actor, params.connector_id)) }),
  }),
  defineRoute({
    method: 'patch',
    path: '/connectors/{connector_id}',
    operationId: 'updateConnector',
    summary: 'Change a connector',
    description:
      'Fields sent replace the current values; `url: null` removes the URL. The URL passes the same check as on create (400 on `url`); a name taken by another live connector of the organization is 409, and so is a change to a deleted connector.',
    tag,
    params: connectorIdParams,
    body: updateConnectorBody,
    response: { status: 200, description: 'The updated connector', schema: connectorEnvelope },
    errors: [403, 404, 409],
    authorize: aManager,
    handler: async ({ params, body, actor, deps }) => ({ connector: presentConnector(await updateConnector(deps, actor, params.connector_id, body)) }),
  }),
  defineRoute({
    method: 'delete',
    path: '/connectors/{connector_id}',
    operationId: 'deleteConnector',
    summary: 'Delete a connector (soft delete) and erase every user’s credential for it',
    description:
      'The connector keeps `deleted_at`/`deleted_by_id` and leaves the lists; the stored secrets are erased. Deleting a deleted connector is a no-op 204.',
    tag,
    params: connectorIdParams,
    response: { status: 204, description: 'Deleted' },
    errors: [403, 404],
    authorize: aManager,
    handler: ({ params, actor, deps }) => deleteConnector(deps, actor, params.connector_id),
  }),
  defineRoute({
    method: 'get',
    path: '/connector-credentials',
    operationId: 'listConnectorCredentials',
    summary: 'List the caller’s own credential status for every connector of an organization',
    description:
      'One item per live connector, newest connector first, keyset paged: `set`, and when it is set `last4` (the last four characters of a secret of at least 12) and `updated_at`. The secret itself is never shown. A caller who is not a member gets an empty page.',
    tag,
    query: listConnectorsQuery,
    response: { status: 200, description: 'A page of credential statuses', schema: connectorCredentialPage },
    authorize: listing(),
    handler: async ({ query, actor, deps }) => presentPage(await listCredentials(deps, actor, query), presentCredential),
  }),
  defineRoute({
    method: 'patch',
    path: '/connector-credentials/{connector_id}',
    operationId: 'setConnectorCredential',
    summary: 'Set or replace the caller’s own secret for a connector',
    description:
      'Stored encrypted (AES-256-GCM under the first key of `CONNECTOR_SECRET_KEYS`) and never shown again: the answer carries only `set`, `last4` and `updated_at`. Any member who can read the connector may set their own secret; 409 for a deleted connector; 503 when the service has no encryption key configured (production without `CONNECTOR_SECRET_KEYS`).',
    tag,
    params: connectorIdParams,
    body: setConnectorCredentialBody,
    response: { status: 200, description: 'The credential status', schema: connectorCredentialEnvelope },
    errors: [404, 409, 503],
    authorize: aMember,
    handler: async ({ params, body, actor, deps }) => ({ credential: presentCredential(await setCredential(deps, actor, params.connector_id, body.secret)) }),
  }),
  defineRoute({
    method: 'delete',
    path: '/connector-credentials/{connector_id}',
    operationId: 'deleteConnectorCredential',
    summary: 'Remove the caller’s own secret for a connector',
    description: 'Removing a secret that is not set is a no-op 204.',
    tag,
    params: connectorIdParams,
    response: { status: 204, description: 'Removed' },
    errors: [404],
    authorize: aMember,
    handler: ({ params, actor, deps }) => deleteCredential(deps, actor, params.connector_id),
  }),
  defineRoute({
    method: 'post',
    path: '/connectors/{connector_id}/refresh',
    operationId: 'refreshConnectorTools',
    summary: 'List an MCP connector’s tools again (with your credential)',
    description:
      'Connects to the `mcp` connector’s server (MCP Streamable HTTP, through the outbound SSRF guard: a non-public address is refused unless `OUTBOUND_ALLOWLIST` opens it) with the caller’s own credential, lists its tools and caches the list for the caller; chat turns offer these tools (named `<namespace>__<tool>`, the namespace being the connector’s name in lowercase letters, digits and `_`) and list them again themselves when the cache is older than `CHAT_CONNECTOR_TOOLS_TTL_SECONDS`. Any member of the organization (404 otherwise). 409 when the connector is deleted, is not of type `mcp`, has no `url`, or needs a credential the caller has not set; 502 `upstream_failed` naming the connector and the server’s answer (e.g. 401) when listing fails.',
    tag,
    params: connectorIdParams,
    response: { status: 200, description: 'The tools the server lists', schema: connectorToolsSchema },
    errors: [404, 409, 502],
    authorize: aMember,
    handler: async ({ params, actor, deps }) => ({ tools: await refreshConnectorTools(deps, actor, params.connector_id) }),
  }),
  ...connectorOAuthRoutes,
];
