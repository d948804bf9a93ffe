import type { Knex } from 'knex';

/**
 * A failed trends refresh is remembered for SOCIAL_TRENDS_FAILURE_TTL_SECONDS: requests meanwhile
 * answer 502 at once instead of asking the provider again (which costs us, and bills nobody).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE social_trends
      -- The last refresh that failed, and why ({kind, message}); an older success does not clear it, a later one outdates it.
      ADD COLUMN failed_at timestamptz,
      ADD COLUMN failure jsonb,
      ADD CHECK ((failed_at IS NULL) = (failure IS NULL));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE social_trends DROP COLUMN failed_at, DROP COLUMN failure');
}
