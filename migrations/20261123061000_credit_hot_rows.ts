import type { Knex } from 'knex';

/**
 * Keeps the rows every hold and capture updates (an organization's balance and its grants) cheap
 * to update over and over: HOT updates (no new index entries, no index bloat on a row updated
 * thousands of times a minute) need free room on the row's page and no indexed column changing.
 * The draw-down index therefore no longer names `remaining` in its predicate (it changed on every
 * hold and capture), and both tables leave room on their pages.
 *
 * And holds and ledger rows reference the organization's balance row instead of the organization:
 * a foreign-key check share-locks the row it points at, so every hold and ledger row of an
 * organization used to lock its organizations row, and concurrent lockers of one row need a
 * multixact each time — a second hot spot. The balance row exists for every organization that has
 * credits (it is written first, by every writer of the ledger) and the writer already holds it
 * locked, so the check costs nothing and proves the same.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX credit_grants_drawdown_idx;
    CREATE INDEX credit_grants_drawdown_idx ON credit_grants (organization_id, expires_at NULLS LAST, priority, seq) WHERE expired_at IS NULL;
    ALTER TABLE credit_grants SET (fillfactor = 50);
    ALTER TABLE credit_balances SET (fillfactor = 50);
    ALTER TABLE credit_holds DROP CONSTRAINT credit_holds_organization_id_fkey,
      ADD CONSTRAINT credit_holds_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES credit_balances (organization_id) ON DELETE CASCADE;
    ALTER TABLE credit_ledger_entries DROP CONSTRAINT credit_ledger_entries_organization_id_fkey,
      ADD CONSTRAINT credit_ledger_entries_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES credit_balances (organization_id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE credit_ledger_entries DROP CONSTRAINT credit_ledger_entries_organization_id_fkey,
      ADD CONSTRAINT credit_ledger_entries_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations (id);
    ALTER TABLE credit_holds DROP CONSTRAINT credit_holds_organization_id_fkey,
      ADD CONSTRAINT credit_holds_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations (id) ON DELETE CASCADE;
    ALTER TABLE credit_balances RESET (fillfactor);
    ALTER TABLE credit_grants RESET (fillfactor);
    DROP INDEX credit_grants_drawdown_idx;
    CREATE INDEX credit_grants_drawdown_idx ON credit_grants (organization_id, expires_at NULLS LAST, priority, seq) WHERE remaining > 0;
  `);
}
