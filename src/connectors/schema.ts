import { lifecycleFields } from '../access/index.ts';
import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, checkedByServer, HTTP_URL_PATTERN, singleLine, timestamp, uuid, z } from '../core/zod.ts';

/**
 * What a connector speaks: `http` a plain HTTP API, `mcp` a Model Context Protocol server,
 * `openapi` an HTTP API described by an OpenAPI document at `url`.
 */
export const connectorTypes = ['http', 'mcp', 'openapi'] as const;
/**
 * How a user's secret is sent: `none` no secret, `bearer` `Authorization: Bearer`, `header` an API-key header, `basic` HTTP Basic
 * (`user:password`); `oauth` each member connects with OAuth 2.1 (MCP authorization), `oauth_client_credentials` the
 * organization's client-credentials grant (an admin configures the client).
 */
export const authSchemes = ['none', 'bearer', 'header', 'basic', 'oauth', 'oauth_client_credentials'] as const;

export const CONNECTOR_SECRET_MAX = 8192;

const organizationId = z.string().min(1).max(64);
const name = singleLine(120);
const url = z
  .string()
  .max(2048)
  .openapi({
    description: 'Base URL, `http` or `https`; refused (400) when it names a loopback, private, link-local or other non-public address.',
    pattern: HTTP_URL_PATTERN,
    [CHECKED_BY_SERVER]: true,
  });

/** Names of a connector's tools as its server lists them (MCP tool names: 1–128 characters of letters, digits, `_`, `-`, `.`). */
const approvalTools = z
  .array(z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/, 'must be a tool name of the connector (letters, digits, `_`, `-`, `.`; at most 128)'))
  .max(200);

export const connectorIdParams = z.object({ connector_id: uuid.openapi({ description: 'Connector id (UUID).' }) });

export const connectorSchema = z
  .object({
    id: uuid,
    organization_id: z.string(),
    type: z.enum(connectorTypes),
    name: z.string(),
    url: z.string().nullable(),
    auth_scheme: z.enum(authSchemes),
    needs_approval: z.boolean().openapi({ description: 'A chat turn that calls one of its tools waits for the caller to approve or reject the call.' }),
    approval_tools: z.array(z.string()).openapi({
      description:
        'Tools of the connector (their names on its server, as POST /connectors/{connector_id}/refresh lists them) whose calls wait for approval even when `needs_approval` is false.',
    }),
    created_by_id: z.string().nullable(),
    ...lifecycleFields,
  })
  .strict()
  .openapi('Connector', {
    description: 'An organization-level connector: what to reach and how it authenticates. Secrets are per user (connector credentials).',
  });

export const connectorEnvelope = z.object({ connector: connectorSchema }).strict().openapi('ConnectorEnvelope');
export const connectorPage = pageOf(connectorSchema).openapi('ConnectorPage');

export const createConnectorBody = z
  .object({
    organization_id: organizationId,
    type: z.enum(connectorTypes).openapi({ description: '`http`, `mcp` or `openapi`.' }),
    name,
    url: url.nullable().optional(),
    auth_scheme: z.enum(authSchemes).optional().openapi({ description: 'Default `none`.' }),
    needs_approval: z.boolean().optional().openapi({
      description: 'Default `false`. `true`: a chat turn calling one of its tools stops in `awaiting_approval` until the caller approves or rejects the call.',
    }),
    approval_tools: approvalTools.optional().openapi({
      description:
        'Default `[]`. Tools of the connector (their names on its server) that need approval one by one: a chat turn calling one stops in `awaiting_approval`, other tools run at once.',
    }),
  })
  .strict()
  // The server's rule, declared: the OAuth schemes are for MCP connectors only.
  .openapi({
    not: {
      required: ['type', 'auth_scheme'],
      properties: { type: { not: { const: 'mcp' } }, auth_scheme: { enum: ['oauth', 'oauth_client_credentials'] } },
    },
  } as Record<string, unknown>)
  .openapi('CreateConnector');

export const updateConnectorBody = z
  .object({
    type: z.enum(connectorTypes).optional(),
    name: name.optional(),
    url: url.nullable().optional(),
    auth_scheme: checkedByServer(
      z.enum(authSchemes).optional(),
      '`oauth` and `oauth_client_credentials` are for `mcp` connectors only: 400 for a connector of another type.',
    ),
    needs_approval: z.boolean().optional(),
    approval_tools: approvalTools.optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'send at least one of type, name, url, auth_scheme, needs_approval, approval_tools')
  .openapi({ minProperties: 1 })
  .openapi('UpdateConnector', { description: 'Fields sent replace the current values; fields omitted keep them.' });

export const listConnectorsQuery = z.object({ organization_id: organizationId, ...pageQuery });

/** A user's credential for a connector, as the API shows it: never the secret, only whether one is set, when, and its last four characters. */
export const connectorCredentialSchema = z
  .object({
    connector_id: uuid,
    set: z.boolean(),
    last4: z.string().nullable().openapi({ description: 'The last four characters of the secret; null when none is set or it is shorter than 12 characters.' }),
    updated_at: timestamp.nullable().openapi({ description: 'When the secret was last set; null when none is set.' }),
  })
  .strict()
  .openapi('ConnectorCredential');

export const connectorCredentialEnvelope = z.object({ credential: connectorCredentialSchema }).strict().openapi('ConnectorCredentialEnvelope');
export const connectorCredentialPage = pageOf(connectorCredentialSchema).openapi('ConnectorCredentialPage');

export const setConnectorCredentialBody = z
  .object({
    secret: z
      .string()
      .min(1)
      .max(CONNECTOR_SECRET_MAX)
      .openapi({ description: 'The secret (token, API key, or `user:password` for basic). Stored encrypted; never shown again.', writeOnly: true }),
  })
  .strict()
  .openapi('SetConnectorCredential');

export const connectorToolsSchema = z
  .object({
    tools: z.array(
      z
        .object({
          name: z.string().openapi({ description: 'The tool’s name on the server; a chat turn offers it as `<connector namespace>__<name>`.' }),
          description: z.string(),
          input_schema: z.record(z.string(), z.unknown()).openapi({ description: 'JSON Schema of the tool’s arguments, as the server lists it.' }),
        })
        .strict(),
    ),
  })
  .strict()
  .openapi('ConnectorTools');
