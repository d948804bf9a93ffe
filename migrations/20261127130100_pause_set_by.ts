import type { Knex } from 'knex';

/**
 * Who set and who ended a pause, as the organization's view needs it: an operator's pause shows an
 * organization's owners and admins that their work is paused and since when, not who or why, and
 * only operators lift it. `set_by` is 'operator' or 'organization'; `resumed_by_operator` is null
 * while the pause is open. Existing rows are read from the audit log (who created and resumed each
 * pause, and with which role); a pause the log does not explain counts as an operator's, which
 * shows less, never more.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE job_pauses
      ADD COLUMN set_by text NOT NULL DEFAULT 'operator' CHECK (set_by IN ('operator', 'organization')),
      ADD COLUMN resumed_by_operator boolean;

    UPDATE job_pauses p SET set_by = 'organization'
     WHERE p.organization_id IS NOT NULL
       AND EXISTS (SELECT 1 FROM operator_actions a
                    WHERE a.action = 'pause.create' AND a.target->>'pause_id' = p.id::text AND a.actor_role <> 'operator');

    UPDATE job_pauses p SET resumed_by_operator = CASE
        WHEN p.resumed_by = 'expiry' THEN false
        WHEN EXISTS (SELECT 1 FROM operator_actions a
                      WHERE a.action = 'pause.resume' AND a.target->>'pause_id' = p.id::text AND a.actor_role <> 'operator') THEN false
        ELSE true END
     WHERE p.resumed_at IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE job_pauses DROP COLUMN set_by, DROP COLUMN resumed_by_operator');
}
