import type { Knex } from 'knex';

/**
 * The credits ledger. Every movement is an immutable double-entry row moving `amount` from one
 * account of the organization to another (issued → available → held → spent, available → expired);
 * `credit_balances` is the maintained sum of those rows, guarded by a CHECK so that available
 * credits can never go below zero whatever the concurrency.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE credit_balances (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      granted bigint NOT NULL DEFAULT 0 CHECK (granted >= 0),
      captured bigint NOT NULL DEFAULT 0 CHECK (captured >= 0),
      held bigint NOT NULL DEFAULT 0 CHECK (held >= 0),
      expired bigint NOT NULL DEFAULT 0 CHECK (expired >= 0),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT credit_balances_available_not_negative CHECK (granted - captured - held - expired >= 0)
    );

    CREATE TABLE credit_grants (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      source text NOT NULL CHECK (source IN ('starter', 'purchase', 'plan_cycle', 'adjustment', 'refund')),
      amount bigint NOT NULL CHECK (amount > 0),
      -- Credits of the grant not yet reserved by a hold, captured or expired.
      remaining bigint NOT NULL CHECK (remaining >= 0 AND remaining <= amount),
      priority integer NOT NULL DEFAULT 100,
      description text NOT NULL,
      metadata jsonb NOT NULL DEFAULT '{}',
      expires_at timestamptz,
      expired_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE
    );
    -- Draw-down order: earliest expiry first (never-expiring last), then priority, then creation.
    CREATE INDEX credit_grants_drawdown_idx ON credit_grants (organization_id, expires_at NULLS LAST, priority, seq) WHERE remaining > 0;
    CREATE INDEX credit_grants_due_idx ON credit_grants (expires_at) WHERE expired_at IS NULL AND expires_at IS NOT NULL;
    CREATE INDEX credit_grants_org_due_idx ON credit_grants (organization_id, expires_at) WHERE expired_at IS NULL AND expires_at IS NOT NULL;
    -- A workspace gets its starter grant once, however often creation is retried.
    CREATE UNIQUE INDEX credit_grants_one_starter_idx ON credit_grants (organization_id) WHERE source = 'starter';

    CREATE TABLE credit_holds (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id text REFERENCES users (id),
      -- Caller-chosen id of the work the hold pays for (a chat run, a job); replays find the hold by it.
      run_id text,
      reason text NOT NULL,
      amount bigint NOT NULL CHECK (amount > 0),
      captured bigint NOT NULL DEFAULT 0 CHECK (captured >= 0),
      released bigint NOT NULL DEFAULT 0 CHECK (released >= 0),
      status text NOT NULL DEFAULT 'held' CHECK (status IN ('held', 'captured', 'released', 'expired')),
      -- How it was resolved: a final capture, a settle (chat runs), an explicit release, or expiry.
      resolution text CHECK (resolution IN ('capture', 'settle', 'release', 'expiry')),
      conversation_id text,
      message_id text,
      tool_call_id text,
      expires_at timestamptz NOT NULL,
      resolved_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      CHECK (captured + released <= amount),
      -- Resolved exactly once: a resolved hold has nothing left to capture or release.
      CHECK ((status = 'held') = (resolved_at IS NULL) AND (status = 'held') = (resolution IS NULL)),
      CHECK (status = 'held' OR captured + released = amount)
    );
    CREATE UNIQUE INDEX credit_holds_run_idx ON credit_holds (organization_id, run_id);
    CREATE INDEX credit_holds_due_idx ON credit_holds (expires_at) WHERE status = 'held';
    CREATE INDEX credit_holds_member_idx ON credit_holds (organization_id, user_id) WHERE status = 'held';

    -- Which grants a hold reserved, so captures consume and releases return exactly those credits.
    CREATE TABLE credit_hold_allocations (
      hold_id uuid NOT NULL REFERENCES credit_holds (id) ON DELETE CASCADE,
      grant_id uuid NOT NULL REFERENCES credit_grants (id) ON DELETE CASCADE,
      position integer NOT NULL,
      amount bigint NOT NULL CHECK (amount > 0),
      captured bigint NOT NULL DEFAULT 0,
      released bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (hold_id, position),
      CHECK (captured >= 0 AND released >= 0 AND captured + released <= amount)
    );

    -- One row per capture of a hold; capture_key makes a replayed capture find its first result.
    CREATE TABLE credit_captures (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      hold_id uuid NOT NULL REFERENCES credit_holds (id) ON DELETE CASCADE,
      capture_key text,
      amount bigint NOT NULL CHECK (amount >= 0),
      tool_call_id text,
      description text,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX credit_captures_key_idx ON credit_captures (hold_id, capture_key);

    CREATE TABLE credit_ledger_entries (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      -- No cascade: the ledger outlives everything it records (organizations are soft-deleted).
      organization_id text NOT NULL REFERENCES organizations (id),
      kind text NOT NULL CHECK (kind IN ('grant', 'purchase', 'plan_refill', 'hold', 'capture', 'release', 'expiry', 'refund', 'adjustment')),
      amount bigint NOT NULL CHECK (amount > 0),
      from_account text NOT NULL CHECK (from_account IN ('issued', 'available', 'held', 'spent', 'expired')),
      to_account text NOT NULL CHECK (to_account IN ('issued', 'available', 'held', 'spent', 'expired')),
      grant_id uuid REFERENCES credit_grants (id),
      hold_id uuid REFERENCES credit_holds (id),
      capture_id uuid REFERENCES credit_captures (id),
      user_id text,
      conversation_id text,
      message_id text,
      tool_call_id text,
      description text NOT NULL,
      metadata jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now(),
      CHECK (from_account <> to_account)
    );
    CREATE INDEX credit_ledger_entries_org_idx ON credit_ledger_entries (organization_id, seq DESC);
    CREATE INDEX credit_ledger_entries_member_idx ON credit_ledger_entries (organization_id, user_id, created_at);
    CREATE INDEX credit_ledger_entries_hold_idx ON credit_ledger_entries (hold_id);
    CREATE INDEX credit_ledger_entries_grant_idx ON credit_ledger_entries (grant_id);

    -- Append-only: corrections are new rows, never edits.
    CREATE FUNCTION credit_ledger_entries_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'credit ledger entries are immutable (% rejected)', TG_OP USING ERRCODE = 'restrict_violation';
    END $$;
    CREATE TRIGGER credit_ledger_entries_no_update BEFORE UPDATE OR DELETE ON credit_ledger_entries
      FOR EACH ROW EXECUTE FUNCTION credit_ledger_entries_immutable();
    CREATE TRIGGER credit_ledger_entries_no_truncate BEFORE TRUNCATE ON credit_ledger_entries
      FOR EACH STATEMENT EXECUTE FUNCTION credit_ledger_entries_immutable();

    -- A member's spending limit per credit period (null: no limit).
    CREATE TABLE credit_member_limits (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id),
      spending_limit bigint CHECK (spending_limit >= 0),
      updated_by_id text REFERENCES users (id),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, user_id)
    );

    -- Stored responses of credit-moving requests sent with an Idempotency-Key (per organization).
    CREATE TABLE idempotency_keys (
      organization_id text NOT NULL,
      key text NOT NULL,
      operation text NOT NULL,
      request_hash text NOT NULL,
      response_status integer NOT NULL,
      response_body jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, key)
    );
    CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE idempotency_keys;
    DROP TABLE credit_member_limits;
    DROP TABLE credit_ledger_entries;
    DROP FUNCTION credit_ledger_entries_immutable();
    DROP TABLE credit_captures;
    DROP TABLE credit_hold_allocations;
    DROP TABLE credit_holds;
    DROP TABLE credit_grants;
    DROP TABLE credit_balances;
  `);
}
