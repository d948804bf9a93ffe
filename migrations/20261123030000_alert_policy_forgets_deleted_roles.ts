import type { Knex } from 'knex';

/**
 * A deleted custom role leaves the alert policies that name it, in the deleting transaction: the
 * `ON DELETE CASCADE` a foreign key would give if `notify_roles` were a table rather than an array.
 * It lives here rather than in the roles service so that roles need not know about alert policies
 * (alert policies depend on roles, not the other way round).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION organization_alert_policies_forget_role() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE organization_alert_policies SET notify_roles = array_remove(notify_roles, OLD.key)
       WHERE organization_id = OLD.organization_id AND OLD.key = ANY (notify_roles);
      RETURN NULL;
    END $$;
    CREATE TRIGGER organization_roles_forget_alert_role AFTER DELETE ON organization_roles
      FOR EACH ROW EXECUTE FUNCTION organization_alert_policies_forget_role();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER organization_roles_forget_alert_role ON organization_roles;
    DROP FUNCTION organization_alert_policies_forget_role();
  `);
}
