import type { Knex } from 'knex';

/**
 * A metered read in fewer round trips, and its capture out of the job's ending transaction (issue 21).
 *
 * `metered_call_accept`: the web's accept of a read in ONE statement — the call's row, its pg-boss
 * job, whose statements pg-boss itself wrote (src/jobs/enqueue.ts `sendStatement`; run here with
 * EXECUTE, so no SQL of pg-boss's schema lives in this migration), then the credit hold
 * (`credit_reserve`, unchanged) last, so the balance row's lock covers only the hold and the commit;
 * a refusal deletes the call and the job again before anyone could see them. Before: the hold
 * alone, then BEGIN, the call, the job, COMMIT (five round trips).
 *
 * `credit_holds.pending_capture`: a final capture decided by the transaction that settled the
 * work (a metered read's job end: the call succeeded and what it costs is known) but not yet
 * posted to the balance, grants and ledger. Writing it locks only the hold's row; the capture is
 * then posted by `credit_post_capture`, one autocommitted statement right after that commit, so
 * the organization's balance row is locked for that one statement instead of until the job's
 * COMMIT came back from a busy worker. The column is the journal that makes this crash-safe: a
 * worker killed between the two leaves the decision on the hold, and whoever comes next posts it
 * (the web request waiting for the read when it gives up, the hold expiry job every minute); a
 * pending hold never expires unused. Posting is once: the hold row is locked and must still be
 * open, and the capture row's key is `final`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE credit_holds ADD COLUMN pending_capture jsonb
      CHECK (pending_capture IS NULL OR (jsonb_typeof(pending_capture->'amount') = 'number' AND (pending_capture->>'amount')::bigint >= 0));

    -- Records a final capture of the hold of p_run_id as decided (pending_capture), for credit_post_capture
    -- to post after the caller's commit. Only on an open hold within its time, with nothing pending and
    -- enough left: returns its id, else NULL and writes nothing (the caller captures the usual way, which
    -- says what is wrong). It locks the hold's row only.
    CREATE FUNCTION credit_pend_capture(
      p_organization_id text, p_run_id text, p_reason text, p_amount bigint, p_tool_call_id text, p_description text, p_metadata jsonb
    ) RETURNS uuid LANGUAGE sql AS $$
      UPDATE credit_holds
         SET pending_capture = jsonb_build_object('amount', p_amount, 'tool_call_id', p_tool_call_id, 'description', p_description,
                                                  'metadata', coalesce(p_metadata, '{}'::jsonb))
       WHERE organization_id = p_organization_id AND run_id = p_run_id AND (p_reason IS NULL OR reason = p_reason)
         AND status = 'held' AND pending_capture IS NULL AND expires_at > now() AND p_amount BETWEEN 0 AND amount - captured - released
      RETURNING id
    $$;

    -- Posts a hold's pending final capture: {amount, tool_call_id, description, metadata}. Its time
    -- limit is not checked again (the capture was decided while the hold was open). Outcomes:
    -- captured; none (no pending capture, or the hold already resolved: posted before); not_found.
    CREATE FUNCTION credit_post_capture(p_hold_id uuid) RETURNS TABLE (outcome text, hold jsonb) LANGUAGE plpgsql AS $$
    DECLARE
      h credit_holds;
      c credit_captures;
      p jsonb;
    BEGIN
      SELECT * INTO h FROM credit_holds WHERE id = p_hold_id FOR UPDATE;
      IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found', NULL::jsonb;
        RETURN;
      END IF;
      p := h.pending_capture;
      IF p IS NULL OR h.status <> 'held' THEN
        RETURN QUERY SELECT 'none', to_jsonb(h);
        RETURN;
      END IF;
      INSERT INTO credit_captures (hold_id, capture_key, amount, tool_call_id, description)
      VALUES (p_hold_id, 'final', (p->>'amount')::bigint, p->>'tool_call_id', p->>'description')
      RETURNING * INTO c;
      SELECT * INTO h FROM credit_resolve_hold(
        p_hold_id, c.amount, c.id, c.tool_call_id, coalesce(c.description, 'Used for ' || h.reason), coalesce(p->'metadata', '{}'::jsonb),
        'captured', 'capture', 'Released: not used', '{}'::jsonb);
      RETURN QUERY SELECT 'captured', to_jsonb(h);
    END $$;

    -- A metered read accepted: its call (p_call: the metered_calls columns a new call sets), its job
    -- (pg-boss's own insert statement and its one parameter), then the hold (credit_reserve's
    -- arguments and outcomes) LAST, so the organization's balance row is locked only from the hold
    -- to this statement's commit. Refused, the call and the job are deleted again (pg-boss's own
    -- delete statement, by queue name and id): none of it was ever visible, nothing is left.
    CREATE FUNCTION metered_call_accept(
      p_organization_id text, p_user_id text, p_run_id text, p_run_is_new boolean, p_reason text, p_amount bigint,
      p_conversation_id text, p_message_id text, p_tool_call_id text, p_expires_in_seconds integer, p_description text,
      p_period_start timestamptz, p_period_end timestamptz,
      p_call jsonb, p_job_sql text, p_job_value text, p_unjob_sql text, p_job_name text
    ) RETURNS TABLE (outcome text, hold jsonb, detail jsonb) LANGUAGE plpgsql AS $$
    DECLARE
      r record;
      c metered_calls;
      job_id uuid;
    BEGIN
      -- What credit_reserve would ask for before deciding anything (as it asks), asked before anything is written.
      IF p_period_start IS NULL AND EXISTS (SELECT 1 FROM credit_member_limits l WHERE l.organization_id = p_organization_id
                                              AND l.user_id = p_user_id AND l.spending_limit IS NOT NULL) THEN
        RETURN QUERY SELECT 'needs_period', NULL::jsonb, NULL::jsonb;
        RETURN;
      END IF;
      IF EXISTS (SELECT 1 FROM credit_grants g WHERE g.organization_id = p_organization_id AND g.expired_at IS NULL
                    AND g.expires_at IS NOT NULL AND g.expires_at <= now()) THEN
        RETURN QUERY SELECT 'needs_expiry', NULL::jsonb, NULL::jsonb;
        RETURN;
      END IF;
      c := jsonb_populate_record(NULL::metered_calls, p_call);
      INSERT INTO metered_calls (id, organization_id, user_id, operation, input, quoted_credits, quoted_pages, max_credits, tool_call_id,
                                 conversation_id, message_id, run_lock, chat_run_id, request_id, hold_run_id)
      VALUES (c.id, c.organization_id, c.user_id, c.operation, c.input, c.quoted_credits, c.quoted_pages, c.max_credits, c.tool_call_id,
              c.conversation_id, c.message_id, coalesce(c.run_lock, false), c.chat_run_id, c.request_id, c.hold_run_id);
      EXECUTE p_job_sql INTO job_id USING p_job_value;
      IF job_id IS NULL THEN
        RAISE EXCEPTION 'metered call %: pg-boss queued no job', c.id;
      END IF;
      SELECT * INTO r FROM credit_reserve(p_organization_id, p_user_id, p_run_id, p_run_is_new, p_reason, p_amount, p_conversation_id,
                                          p_message_id, p_tool_call_id, p_expires_in_seconds, p_description, p_period_start, p_period_end);
      IF r.outcome <> 'reserved' THEN
        EXECUTE p_unjob_sql USING p_job_name, ARRAY[job_id];
        DELETE FROM metered_calls WHERE id = c.id;
      END IF;
      RETURN QUERY SELECT r.outcome, r.hold, r.detail;
    END $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  const { rows } = await knex.raw(`SELECT count(*) AS n FROM credit_holds WHERE status = 'held' AND pending_capture IS NOT NULL`);
  if (Number(rows[0].n) > 0) throw new Error('credit holds have captures pending: post them (the hold expiry job does) before migrating down');
  await knex.raw(`
    DROP FUNCTION metered_call_accept(text, text, text, boolean, text, bigint, text, text, text, integer, text, timestamptz, timestamptz, jsonb, text, text, text, text);
    DROP FUNCTION credit_post_capture(uuid);
    DROP FUNCTION credit_pend_capture(text, text, text, bigint, text, text, jsonb);
    ALTER TABLE credit_holds DROP COLUMN pending_capture;
  `);
}
