import type { Knex } from 'knex';

/**
 * Webhook endpoints of an organization and their deliveries. An endpoint's signing secret is
 * sealed at rest like connector credentials (AES-256-GCM, `key_id` names the key); a rotated-out
 * secret keeps signing beside the new one until `previous_secret_expires_at`. One delivery per
 * (event, endpoint) — a redelivery is a new row naming the one it repeats — and one attempt row
 * per HTTP attempt, so every try is on record whatever happens to the worker afterwards.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE webhook_endpoints (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      url text NOT NULL CHECK (length(url) <= 2048),
      event_types text[] NOT NULL CHECK (cardinality(event_types) BETWEEN 1 AND 100),
      description text CHECK (length(description) <= 500),
      enabled boolean NOT NULL DEFAULT true,
      -- Why the service disabled it (null when enabled, or disabled by a person).
      disabled_reason text,
      secret_ciphertext bytea NOT NULL,
      secret_iv bytea NOT NULL CHECK (length(secret_iv) = 12),
      secret_auth_tag bytea NOT NULL CHECK (length(secret_auth_tag) = 16),
      secret_key_id text NOT NULL,
      previous_secret_ciphertext bytea,
      previous_secret_iv bytea CHECK (length(previous_secret_iv) = 12),
      previous_secret_auth_tag bytea CHECK (length(previous_secret_auth_tag) = 16),
      previous_secret_key_id text,
      previous_secret_expires_at timestamptz,
      -- The member whose access decides what the endpoint receives.
      created_by_id text NOT NULL REFERENCES users (id),
      -- First failed attempt since the last success: failing for days disables the endpoint.
      failing_since timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX webhook_endpoints_list_idx ON webhook_endpoints (organization_id, created_at DESC, id DESC);
    -- Fan-out: the enabled endpoints of an organization subscribed to a type.
    CREATE INDEX webhook_endpoints_fan_out_idx ON webhook_endpoints USING gin (event_types) WHERE enabled;

    CREATE TABLE webhook_deliveries (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      event_id text NOT NULL,
      event_type text NOT NULL,
      -- The message as sent (the event without its subject), and the subject access is decided on.
      payload jsonb NOT NULL,
      subject_type text,
      subject_id text,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'skipped')),
      -- Why a delivery failed or was skipped (no access, endpoint disabled…), in words.
      status_reason text,
      attempts integer NOT NULL DEFAULT 0,
      response_status integer,
      response_body text,
      latency_ms integer,
      last_attempt_at timestamptz,
      delivered_at timestamptz,
      job_id uuid,
      redelivery_of uuid REFERENCES webhook_deliveries (id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX webhook_deliveries_list_idx ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
    -- The console's backlog: open deliveries only.
    CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (created_at) WHERE status = 'pending';

    CREATE TABLE webhook_delivery_attempts (
      id bigserial PRIMARY KEY,
      delivery_id uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
      attempt integer NOT NULL,
      job_id uuid,
      started_at timestamptz NOT NULL,
      latency_ms integer NOT NULL,
      response_status integer,
      response_body text,
      error_code text,
      error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (delivery_id, attempt)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE webhook_delivery_attempts; DROP TABLE webhook_deliveries; DROP TABLE webhook_endpoints;');
}
