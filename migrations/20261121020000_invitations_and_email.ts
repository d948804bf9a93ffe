import type { Knex } from 'knex';

/** Invitations to join an organization, and the e-mail outbox (sandbox messages, SMTP delivery records). */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE invitations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      -- Stored lower-cased: the invitee is matched on the token's e-mail case-insensitively.
      email text NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 320),
      role text NOT NULL,
      -- 'expired' is stored once a newer invitation replaces a lapsed one; until then a pending
      -- invitation past expires_at reads as expired.
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'declined', 'revoked', 'expired')),
      invited_by_id text NOT NULL REFERENCES users (id),
      expires_at timestamptz NOT NULL,
      accepted_at timestamptz,
      accepted_by_id text REFERENCES users (id),
      declined_at timestamptz,
      revoked_at timestamptz,
      revoked_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    -- One open invitation per address and organization (a concurrent duplicate gets 409).
    CREATE UNIQUE INDEX invitations_one_pending_key ON invitations (organization_id, email) WHERE status = 'pending';
    CREATE INDEX invitations_list_idx ON invitations (organization_id, created_at DESC, id DESC);

    CREATE TABLE email_outbox (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      idempotency_key text NOT NULL UNIQUE,
      to_address text NOT NULL,
      subject text NOT NULL,
      text_body text NOT NULL,
      html_body text,
      provider text NOT NULL,
      -- SMTP: the Message-ID used for every attempt, and when the server accepted the message.
      message_id text,
      sent_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX email_outbox_created_idx ON email_outbox (created_at DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE email_outbox; DROP TABLE invitations;');
}
