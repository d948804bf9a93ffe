import type { Knex } from 'knex';

/**
 * What the operator console keeps beside pg-boss's own tables (which keep only a job's current
 * state and last output):
 * - `job_attempts`: each attempt of each job — worker, times, outcome, error — written by the
 *   workers (in batches) and by the sweep that declares a worker lost;
 * - `job_workers`: the live worker processes and their heartbeats, with the jobs they hold;
 * - `job_pauses`: pauses of a queue, of one organization on a queue, or of a schedule;
 *   `job_deferrals` remembers which queued jobs a pause pushed back, and from when, so a resume
 *   restores exactly those;
 * - `bulk_actions` / `bulk_action_items`: durable bulk retries, cancels and redrives with the ids
 *   they matched when previewed, worked in throttled batches by a job;
 * - `operator_actions`: the append-only audit log of every operator action.
 * Organization ids are text, like `organizations.id`; no foreign keys to organizations, so the log
 * and the history outlive a deleted organization.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE job_workers (
      id uuid PRIMARY KEY,
      host text NOT NULL,
      pid integer NOT NULL,
      version text NOT NULL,
      queues text[] NOT NULL,
      concurrency integer NOT NULL,
      -- [{job_id, queue, attempt, started_at}] as of the last heartbeat.
      in_flight jsonb NOT NULL DEFAULT '[]',
      started_at timestamptz NOT NULL DEFAULT now(),
      last_heartbeat_at timestamptz NOT NULL DEFAULT now(),
      -- A clean stop; a lost worker keeps NULL here and an old heartbeat.
      stopped_at timestamptz,
      -- Set once by the sweep that declared the worker lost and retried its jobs.
      lost_at timestamptz
    );
    CREATE INDEX job_workers_live_idx ON job_workers (last_heartbeat_at) WHERE stopped_at IS NULL AND lost_at IS NULL;

    CREATE TABLE job_attempts (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      job_id uuid NOT NULL,
      queue text NOT NULL,
      organization_id text,
      -- pg-boss's retry count when the attempt began (a deferral by a pause repeats the number).
      attempt integer NOT NULL,
      worker_id uuid,
      started_at timestamptz NOT NULL,
      ended_at timestamptz NOT NULL,
      outcome text NOT NULL CHECK (outcome IN ('completed', 'failed', 'deferred', 'lost', 'cancelled')),
      error jsonb
    );
    CREATE INDEX job_attempts_job_idx ON job_attempts (job_id, started_at);
    CREATE INDEX job_attempts_ended_idx ON job_attempts (ended_at);

    CREATE TABLE job_pauses (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      scope text NOT NULL CHECK (scope IN ('queue', 'organization', 'schedule')),
      queue text,
      organization_id text,
      -- 'cron:<queue>' (a platform schedule) or 'task:<scheduled task id>'.
      schedule text,
      reason text NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
      expires_at timestamptz,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      resumed_at timestamptz,
      resumed_by text,
      CHECK (scope <> 'queue' OR (queue IS NOT NULL AND organization_id IS NULL AND schedule IS NULL)),
      CHECK (scope <> 'organization' OR (queue IS NOT NULL AND organization_id IS NOT NULL AND schedule IS NULL)),
      -- A scheduled task's pause records its organization (its admins see it); a platform schedule's has none.
      CHECK (scope <> 'schedule' OR (schedule IS NOT NULL AND queue IS NULL))
    );
    -- One open pause per scope; an expired one is closed (resumed_at) before a new one is written.
    CREATE UNIQUE INDEX job_pauses_open_idx ON job_pauses (scope, coalesce(queue, ''), coalesce(organization_id, ''), coalesce(schedule, ''))
      WHERE resumed_at IS NULL;
    CREATE INDEX job_pauses_org_idx ON job_pauses (organization_id, created_at DESC) WHERE organization_id IS NOT NULL;

    CREATE TABLE job_deferrals (
      job_id uuid PRIMARY KEY,
      queue text NOT NULL,
      pause_id uuid NOT NULL REFERENCES job_pauses (id) ON DELETE CASCADE,
      -- The job's own start_after before the pause pushed it back, restored at resume.
      original_start_after timestamptz NOT NULL,
      deferred_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX job_deferrals_pause_idx ON job_deferrals (pause_id);

    CREATE TABLE bulk_actions (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      action text NOT NULL CHECK (action IN ('retry', 'cancel', 'redrive')),
      -- The filter as asked (for the record); the matching ids are snapshotted in bulk_action_items.
      filter jsonb NOT NULL,
      organization_id text,
      state text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'completed', 'aborted')),
      total integer NOT NULL,
      done integer NOT NULL DEFAULT 0,
      skipped integer NOT NULL DEFAULT 0,
      reason text,
      created_by text NOT NULL,
      request_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      abort_requested_at timestamptz,
      finished_at timestamptz,
      CHECK ((state = 'running') = (finished_at IS NULL))
    );
    CREATE INDEX bulk_actions_created_idx ON bulk_actions (created_at DESC, id DESC);
    CREATE INDEX bulk_actions_org_idx ON bulk_actions (organization_id, created_at DESC) WHERE organization_id IS NOT NULL;

    CREATE TABLE bulk_action_items (
      bulk_action_id uuid NOT NULL REFERENCES bulk_actions (id) ON DELETE CASCADE,
      job_id uuid NOT NULL,
      queue text NOT NULL,
      -- NULL until its batch ran.
      outcome text CHECK (outcome IN ('done', 'skipped')),
      skip_reason text,
      PRIMARY KEY (bulk_action_id, job_id)
    );
    CREATE INDEX bulk_action_items_pending_idx ON bulk_action_items (bulk_action_id) WHERE outcome IS NULL;
    CREATE INDEX bulk_action_items_job_idx ON bulk_action_items (job_id);

    CREATE TABLE operator_actions (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      at timestamptz NOT NULL DEFAULT now(),
      actor_id text NOT NULL,
      -- 'operator', or the organization role ('owner', 'admin') an organization's admin acted with.
      actor_role text NOT NULL,
      organization_id text,
      action text NOT NULL,
      -- The filter, the ids or the pause the action was about.
      target jsonb NOT NULL DEFAULT '{}',
      job_ids uuid[] NOT NULL DEFAULT '{}',
      bulk_action_id uuid,
      count integer NOT NULL DEFAULT 0,
      reason text,
      request_id text
    );
    CREATE INDEX operator_actions_at_idx ON operator_actions (at DESC, id DESC);
    CREATE INDEX operator_actions_org_idx ON operator_actions (organization_id, at DESC, id DESC) WHERE organization_id IS NOT NULL;
    CREATE INDEX operator_actions_jobs_idx ON operator_actions USING gin (job_ids);
    CREATE INDEX operator_actions_bulk_idx ON operator_actions (bulk_action_id) WHERE bulk_action_id IS NOT NULL;

    -- Append-only: the log is evidence, so not even the application may rewrite it.
    CREATE FUNCTION operator_actions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'operator_actions is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
    END $$;
    CREATE TRIGGER operator_actions_append_only BEFORE UPDATE OR DELETE ON operator_actions
      FOR EACH ROW EXECUTE FUNCTION operator_actions_append_only();
    CREATE TRIGGER operator_actions_no_truncate BEFORE TRUNCATE ON operator_actions
      FOR EACH STATEMENT EXECUTE FUNCTION operator_actions_append_only();

    -- Per-minute throughput, per queue and organization, written by a periodic snapshot (not computed per request).
    CREATE TABLE queue_throughput (
      minute timestamptz NOT NULL,
      queue text NOT NULL,
      organization_id text NOT NULL DEFAULT '',
      created integer NOT NULL DEFAULT 0,
      completed integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      PRIMARY KEY (minute, queue, organization_id)
    );
    CREATE INDEX queue_throughput_queue_idx ON queue_throughput (queue, minute DESC);
    CREATE INDEX queue_throughput_org_idx ON queue_throughput (organization_id, minute DESC) WHERE organization_id <> '';
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE queue_throughput;
    DROP TABLE operator_actions;
    DROP FUNCTION operator_actions_append_only();
    DROP TABLE bulk_action_items;
    DROP TABLE bulk_actions;
    DROP TABLE job_deferrals;
    DROP TABLE job_pauses;
    DROP TABLE job_attempts;
    DROP TABLE job_workers;
  `);
}
