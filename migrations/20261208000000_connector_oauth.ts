import type { Knex } from 'knex';

/**
 * OAuth 2.1 for MCP connectors (issue 39), as the MCP authorization specification says: a connector
 * whose `auth_scheme` is `oauth` is connected by each member (authorization code + PKCE), one whose
 * scheme is `oauth_client_credentials` by the organization (client-credentials grant).
 *
 * Every secret here (tokens, PKCE verifiers, client secrets) is sealed with the connector key ring
 * (AES-256-GCM, CONNECTOR_SECRET_KEYS) into one `bytea` (iv ‖ tag ‖ ciphertext) per value, bound to
 * its row; `key_id` names the key of every sealed value of the row.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE connectors DROP CONSTRAINT connectors_auth_scheme_check;
    ALTER TABLE connectors ADD CONSTRAINT connectors_auth_scheme_check
      CHECK (auth_scheme IN ('none', 'bearer', 'header', 'basic', 'oauth', 'oauth_client_credentials'));

    -- The OAuth client the service is at a connector's authorization server: one an admin configured
    -- (pre-registered there), or one it registered itself (RFC 7591) for that issuer and redirect URI.
    CREATE TABLE connector_oauth_clients (
      connector_id uuid PRIMARY KEY REFERENCES connectors (id) ON DELETE CASCADE,
      source text NOT NULL CHECK (source IN ('configured', 'registered')),
      -- The authorization server it was registered with (null for a configured client: any).
      issuer text,
      redirect_uri text,
      client_id text NOT NULL CHECK (length(client_id) BETWEEN 1 AND 1024),
      client_secret bytea,
      key_id text,
      -- What the registration answered (RFC 7591 §3.2.1), the secret left out.
      registration jsonb NOT NULL DEFAULT '{}'::jsonb,
      scope text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((client_secret IS NULL) = (key_id IS NULL))
    );

    -- An authorization a member started and has not finished: its state (hashed: the state itself is
    -- the callback's only credential) is good once, until expires_at.
    CREATE TABLE connector_oauth_authorizations (
      id uuid PRIMARY KEY,
      state_hash bytea NOT NULL UNIQUE,
      connector_id uuid NOT NULL REFERENCES connectors (id) ON DELETE CASCADE,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      code_verifier bytea NOT NULL,
      key_id text NOT NULL,
      redirect_uri text NOT NULL,
      -- Discovery as it was when the member started (RFC 9728 resource, RFC 8414 metadata).
      issuer text NOT NULL,
      authorization_server text NOT NULL,
      server_metadata jsonb NOT NULL,
      resource text,
      scope text,
      client_id text NOT NULL,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX connector_oauth_authorizations_expiry_idx ON connector_oauth_authorizations (expires_at);

    -- A connection: a member's (user_id) or, for client credentials, the organization's (user_id null).
    CREATE TABLE connector_oauth_connections (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      connector_id uuid NOT NULL REFERENCES connectors (id) ON DELETE CASCADE,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id text REFERENCES users (id) ON DELETE CASCADE,
      status text NOT NULL CHECK (status IN ('connected', 'expired', 'revoked', 'needs_reconsent')),
      access_token bytea,
      refresh_token bytea,
      key_id text,
      -- Bumped by every new token: a refresh that waited on the row lock sees another one won.
      token_generation integer NOT NULL DEFAULT 0,
      token_type text,
      scope text,
      expires_at timestamptz,
      issuer text NOT NULL,
      authorization_server text NOT NULL,
      server_metadata jsonb NOT NULL,
      resource text,
      client_id text NOT NULL,
      -- Tokens a revocation job still has to revoke at the server (then erases).
      revoke_pending boolean NOT NULL DEFAULT false,
      last_error text,
      connected_at timestamptz NOT NULL DEFAULT now(),
      refreshed_at timestamptz,
      status_changed_at timestamptz NOT NULL DEFAULT now(),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((access_token IS NULL AND refresh_token IS NULL) OR key_id IS NOT NULL)
    );
    CREATE UNIQUE INDEX connector_oauth_connections_subject_key ON connector_oauth_connections (connector_id, user_id) NULLS NOT DISTINCT;
    CREATE INDEX connector_oauth_connections_member_idx ON connector_oauth_connections (organization_id, user_id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE connector_oauth_connections;
    DROP TABLE connector_oauth_authorizations;
    DROP TABLE connector_oauth_clients;
    UPDATE connectors SET auth_scheme = 'none' WHERE auth_scheme IN ('oauth', 'oauth_client_credentials');
    ALTER TABLE connectors DROP CONSTRAINT connectors_auth_scheme_check;
    ALTER TABLE connectors ADD CONSTRAINT connectors_auth_scheme_check CHECK (auth_scheme IN ('none', 'bearer', 'header', 'basic'));
  `);
}
