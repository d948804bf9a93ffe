import type { Knex } from 'knex';

/**
 * Billing: the organization's billing contact, its subscription (plan, period, a change scheduled
 * for the period end), the billing events feed, Stripe webhook receipts (exactly-once processing),
 * plan-cycle refills (one per organization and period) and the balance-alert watermark.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE billing_customers (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      provider text NOT NULL CHECK (provider IN ('sandbox', 'stripe')),
      provider_customer_id text NOT NULL,
      name text NOT NULL,
      email text NOT NULL,
      address jsonb,
      tax_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX billing_customers_provider_key ON billing_customers (provider, provider_customer_id);

    CREATE TABLE billing_subscriptions (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      provider text NOT NULL CHECK (provider IN ('sandbox', 'stripe')),
      provider_subscription_id text,
      plan text NOT NULL CHECK (plan IN ('free', 'pro', 'team')),
      status text NOT NULL DEFAULT 'active',
      -- Periods are whole months counted from the anchor, so month ends never drift.
      cycle_anchor timestamptz NOT NULL,
      current_period_start timestamptz NOT NULL,
      current_period_end timestamptz NOT NULL CHECK (current_period_end > current_period_start),
      scheduled_plan text CHECK (scheduled_plan IN ('free', 'pro', 'team')),
      scheduled_change_at timestamptz,
      CHECK ((scheduled_plan IS NULL) = (scheduled_change_at IS NULL)),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE billing_events (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      type text NOT NULL,
      title text NOT NULL,
      description text NOT NULL,
      amount numeric(14, 2),
      currency text,
      CHECK ((amount IS NULL) = (currency IS NULL)),
      actor_id text,
      provider_event_id text,
      data jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX billing_events_feed_idx ON billing_events (organization_id, created_at DESC, id DESC);

    CREATE TABLE billing_webhook_receipts (
      provider text NOT NULL,
      event_id text NOT NULL,
      event_type text NOT NULL,
      organization_id text,
      received_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (provider, event_id)
    );

    CREATE TABLE plan_cycle_refills (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      period_start timestamptz NOT NULL,
      period_end timestamptz NOT NULL,
      plan text NOT NULL,
      credits integer NOT NULL CHECK (credits >= 0),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, period_start)
    );

    CREATE TABLE credit_alert_watermarks (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      last_available bigint NOT NULL,
      checked_at timestamptz NOT NULL DEFAULT now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE credit_alert_watermarks; DROP TABLE plan_cycle_refills; DROP TABLE billing_webhook_receipts;
    DROP TABLE billing_events; DROP TABLE billing_subscriptions; DROP TABLE billing_customers;
  `);
}
