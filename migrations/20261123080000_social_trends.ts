import type { Knex } from 'knex';

/**
 * The latest trends of a network in a region (net2 topics, net3 hashtags/sounds/creators): public
 * data, the same for every organization, so it is fetched by a worker at most once per
 * SOCIAL_TRENDS_TTL_SECONDS and served from here, unbilled.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE social_trends (
      operation text NOT NULL,
      region text NOT NULL,
      -- Null until the first fetch lands.
      result jsonb,
      fetched_at timestamptz,
      -- The last refresh asked for: a new one is asked only once it landed (or after 30 s, if it failed).
      refresh_requested_at timestamptz,
      PRIMARY KEY (operation, region),
      CHECK ((result IS NULL) = (fetched_at IS NULL))
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE social_trends');
}
