import type { Knex } from 'knex';

/**
 * The attempt history without a write on the claim's critical path. A worker's claim marks the job
 * with the worker in pg-boss's own UPDATE (`pgboss.job.claimed_by`, added by `release` once
 * pg-boss's schema exists: src/jobs/boss-sql/claims.ts) and writes no row; an attempt's row is
 * written when it ends (or by the sweep that finds its worker lost, or by the next claim of its job).
 * - `job_attempt_records`: the rows written (the former `job_attempts` table, renamed);
 * - `job_claimed_attempts()`: the running attempts that have no row yet, read from the claim's mark.
 *   Its body reads pg-boss's table, so `release` writes it (src/jobs/boss-sql/claims.ts
 *   installClaimMarks) after pg-boss's migrations; until then it returns nothing. A SQL function's
 *   body is not a dependency: pg-boss may rebuild its tables under it;
 * - `job_attempts`: the history every reader reads, both together — each running attempt credited
 *   to its worker, each ended one as written. Writes through it go to `job_attempt_records`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE job_attempts RENAME TO job_attempt_records;

    CREATE FUNCTION job_claimed_attempts() RETURNS SETOF job_attempt_records LANGUAGE sql STABLE AS $fn$
      SELECT * FROM job_attempt_records WHERE false
    $fn$;

    CREATE VIEW job_attempts AS
      SELECT id, job_id, queue, organization_id, attempt, worker_id, started_at, ended_at, outcome, error FROM job_attempt_records
      UNION ALL
      SELECT id, job_id, queue, organization_id, attempt, worker_id, started_at, ended_at, outcome, error FROM job_claimed_attempts();

    CREATE FUNCTION job_attempts_write() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO job_attempt_records (job_id, queue, organization_id, attempt, worker_id, started_at, ended_at, outcome, error)
        VALUES (NEW.job_id, NEW.queue, NEW.organization_id, NEW.attempt, NEW.worker_id, NEW.started_at, NEW.ended_at, NEW.outcome, NEW.error)
        RETURNING id INTO NEW.id;
        RETURN NEW;
      ELSIF TG_OP = 'UPDATE' THEN
        UPDATE job_attempt_records
           SET job_id = NEW.job_id, queue = NEW.queue, organization_id = NEW.organization_id, attempt = NEW.attempt, worker_id = NEW.worker_id,
               started_at = NEW.started_at, ended_at = NEW.ended_at, outcome = NEW.outcome, error = NEW.error
         WHERE id = OLD.id;
        RETURN CASE WHEN FOUND THEN NEW END;
      END IF;
      DELETE FROM job_attempt_records WHERE id = OLD.id;
      RETURN CASE WHEN FOUND THEN OLD END;
    END
    $fn$;
    CREATE TRIGGER job_attempts_write INSTEAD OF INSERT OR UPDATE OR DELETE ON job_attempts FOR EACH ROW EXECUTE FUNCTION job_attempts_write();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP VIEW job_attempts;
    DROP FUNCTION job_attempts_write();
    DROP FUNCTION job_claimed_attempts();
    ALTER TABLE job_attempt_records RENAME TO job_attempts;
  `);
}
