import type { Knex } from 'knex';

/**
 * A member who leaves the organization (removed, or leaving) stops being a recipient of its
 * scheduled tasks' answers in the same transaction — the `ON DELETE CASCADE` a foreign key would
 * give if `email_recipients` were a table rather than an array. It lives here rather than in the
 * members service so that members need not know about scheduled tasks (which depend on members).
 * The e-mail job checks membership and read access again when it sends.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION scheduled_tasks_forget_recipient() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE scheduled_tasks SET email_recipients = array_remove(email_recipients, OLD.user_id)
       WHERE organization_id = OLD.organization_id AND OLD.user_id = ANY (email_recipients);
      RETURN NULL;
    END $$;
    CREATE TRIGGER organization_members_leave_task_recipients AFTER DELETE ON organization_members
      FOR EACH ROW EXECUTE FUNCTION scheduled_tasks_forget_recipient();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER organization_members_leave_task_recipients ON organization_members;
    DROP FUNCTION scheduled_tasks_forget_recipient();
  `);
}
