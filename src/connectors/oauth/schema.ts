import { checkedByServer, singleLine, timestamp, uuid, z } from '../../core/zod.ts';
import { connectionStatuses } from './connections.ts';

export const connectorConnectionSchema = z
  .object({
    connector_id: uuid,
    status: z.enum([...connectionStatuses, 'not_connected']).openapi({
      description:
        '`connected`: turns call its tools with the token (refreshed before it expires); `expired`: the token expired and cannot be refreshed; `needs_reconsent`: the authorization server refused the tokens (revoked there, or a refresh was refused): connect again; `revoked`: disconnected, or the member left the organization; `not_connected`: never connected.',
    }),
    scope: z.string().nullable(),
    expires_at: timestamp.nullable().openapi({ description: 'When the current access token expires (null: the server did not say).' }),
    connected_at: timestamp.nullable(),
    refreshed_at: timestamp.nullable(),
    status_changed_at: timestamp.nullable(),
    last_error: z.string().nullable().openapi({ description: 'Why the connection left `connected`, in words (never a token).' }),
  })
  .strict()
  .openapi('ConnectorConnection', {
    description: 'A member’s OAuth connection to a connector (the organization’s, for client credentials). Tokens are never shown.',
  });

export const connectorConnectionEnvelope = z.object({ connection: connectorConnectionSchema }).strict().openapi('ConnectorConnectionEnvelope');

/** The `connector.connection.changed` event's object. */
export const connectorConnectionEventSchema = connectorConnectionSchema
  .extend({
    connector_name: z.string(),
    user_id: z.string().nullable().openapi({ description: 'Whose connection it is; null for the organization’s (client credentials).' }),
  })
  .openapi('ConnectorConnectionChange');

export const authorizationStartSchema = z
  .object({
    authorization_url: z
      .string()
      .openapi({ description: 'Open it in the member’s browser: the authorization server asks them to sign in and consent, then returns to the callback.' }),
    expires_at: timestamp.openapi({ description: 'The authorization must come back before this (10 minutes).' }),
  })
  .strict()
  .openapi('ConnectorAuthorizationStart');

export const authorizationStartEnvelope = z.object({ authorization: authorizationStartSchema }).strict().openapi('ConnectorAuthorizationStartEnvelope');

/** What an authorization server sends back (RFC 6749 §4.1.2, RFC 9207 `iss`). */
export const callbackQuery = z.object({
  state: checkedByServer(
    z.string().max(512).optional(),
    'Refused (400) unless it is the state of an authorization started in the last 10 minutes and not yet used.',
  ),
  code: z.string().max(4096).optional(),
  error: z.string().max(256).optional(),
  error_description: z.string().max(2048).optional(),
  error_uri: z.string().max(2048).optional(),
  iss: z.string().max(2048).optional(),
  scope: z.string().max(2048).optional(),
  session_state: z.string().max(512).optional(),
});

export const oauthClientSchema = z
  .object({
    connector_id: uuid,
    source: z.enum(['configured', 'registered']).nullable().openapi({
      description: '`configured` by an admin, `registered` by the service itself (RFC 7591); null: none yet (the first connection registers one).',
    }),
    client_id: z.string().nullable(),
    secret_set: z.boolean(),
    scope: z.string().nullable(),
    redirect_uri: z.string().openapi({ description: 'The callback to register at the authorization server for a configured client.' }),
    updated_at: timestamp.nullable(),
  })
  .strict()
  .openapi('ConnectorOAuthClient');

export const oauthClientEnvelope = z.object({ oauth_client: oauthClientSchema }).strict().openapi('ConnectorOAuthClientEnvelope');

export const setOAuthClientBody = z
  .object({
    client_id: singleLine(1024),
    client_secret: z
      .string()
      .min(1)
      .max(4096)
      .nullable()
      .optional()
      .openapi({ writeOnly: true, description: 'Stored encrypted; never shown again. Omit for a public client.' }),
    scope: singleLine(1024).nullable().optional().openapi({ description: 'The scope to ask for (default: what the server asks for).' }),
  })
  .strict()
  .openapi('SetConnectorOAuthClient');
