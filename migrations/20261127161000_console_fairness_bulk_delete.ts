import type { Knex } from 'knex';

/**
 * The job console at scale (issue 25):
 * - a bulk action may also delete jobs (`action = 'delete'`: finished or waiting ones, never running);
 * - each worker records the per-organization limit it enforces on each of its queues
 *   (`organization_concurrency`: pg-boss's local group concurrency, a share of its own slots), so the
 *   fairness panel adds up what the live fleet really allows instead of guessing from the web's config.
 *   Null for workers started before this release (the panel then reads their share from the config).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE bulk_actions DROP CONSTRAINT bulk_actions_action_check;
    ALTER TABLE bulk_actions ADD CONSTRAINT bulk_actions_action_check CHECK (action IN ('retry', 'cancel', 'redrive', 'delete'));
    ALTER TABLE job_workers ADD COLUMN organization_concurrency integer CHECK (organization_concurrency > 0);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DELETE FROM bulk_actions WHERE action = 'delete';
    ALTER TABLE bulk_actions DROP CONSTRAINT bulk_actions_action_check;
    ALTER TABLE bulk_actions ADD CONSTRAINT bulk_actions_action_check CHECK (action IN ('retry', 'cancel', 'redrive'));
    ALTER TABLE job_workers DROP COLUMN organization_concurrency;
  `);
}
