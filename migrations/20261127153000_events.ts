import type { Knex } from 'knex';

/**
 * The event log (an outbox): one row per typed event, written in the transaction of the change it
 * describes (src/core/events.ts). `seq` orders rows of one transaction; `xid` is the writing
 * transaction's id, so a reader can deliver in (xid, seq) order only what lies below its snapshot's
 * xmin — every transaction there has ended, so no row can still appear behind a reader's position
 * (src/events/stream.ts). Kept 30 days (src/events/retention.ts).
 *
 * `event_stream_leases`: the open event streams, one row each, so a caller's streams are counted
 * across web processes; a process that died leaves rows that lapse at `expires_at`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE events (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      seq bigint GENERATED ALWAYS AS IDENTITY,
      xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      type text NOT NULL CHECK (type ~ '^[a-z_]+(\\.[a-z_]+)+$'),
      -- The resource the event is about (checked for read access when delivered); null: an
      -- organization-level event, visible by the permission its type names.
      subject_type text,
      subject_id text,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((subject_type IS NULL) = (subject_id IS NULL))
    );
    CREATE INDEX events_stream_idx ON events (organization_id, xid, seq);
    CREATE INDEX events_list_idx ON events (organization_id, created_at DESC, seq DESC);
    CREATE INDEX events_retention_idx ON events (created_at);

    CREATE TABLE event_stream_leases (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      user_id text NOT NULL,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX event_stream_leases_user_idx ON event_stream_leases (user_id, expires_at);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE event_stream_leases; DROP TABLE events;');
}
