import type { Knex } from 'knex';

/**
 * A hold and a capture, each one statement (issue 9): `credit_reserve` and `credit_capture`, with
 * `credit_resolve_hold` the one resolution step behind every capture, release, settle and expiry.
 *
 * An organization's balance row is its lock: every hold, capture and release of the organization
 * waits on it until the holder commits. Before, a hold or a capture took eight to twelve round
 * trips, four to seven of them while holding that lock. Now the application makes one call, and
 * everything from the checks to the ledger rows runs inside the server; the lock is taken as late
 * as possible within it (after the replay, limit and state checks).
 *
 * Why functions and not a single data-modifying CTE: in a CTE every part reads the snapshot taken
 * when the statement began, i.e. BEFORE it waited for the balance lock, so it would draw from grant
 * figures that the previous lock holder has since changed. In a PL/pgSQL function each statement
 * takes a new snapshot (READ COMMITTED), so the statements after the balance UPDATE see exactly what
 * the previous holder committed. The 402 stays race-free (the conditional UPDATE re-checks the row
 * it waited for) and nothing is written when it refuses, so a caller that catches the 402 inside
 * its own transaction keeps no half-made hold.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- A hold, whole: replay check, spending limit, the gate, the hold, its grants and ledger rows.
    -- Outcomes: reserved (hold), replayed (the earlier hold of the run id), run_conflict (that hold
    -- differs), limit (detail: limit, used), balance (detail: available); needs_period (the member has
    -- a limit: call again with the credit period) and needs_expiry (grants are due to expire: expire
    -- them, call again) write nothing, so the caller may ask again in the same transaction.
    CREATE FUNCTION credit_reserve(
      p_organization_id text, p_user_id text, p_run_id text, p_run_is_new boolean, p_reason text, p_amount bigint,
      p_conversation_id text, p_message_id text, p_tool_call_id text, p_expires_in_seconds integer, p_description text,
      p_period_start timestamptz, p_period_end timestamptz
    ) RETURNS TABLE (outcome text, hold jsonb, detail jsonb) LANGUAGE plpgsql AS $$
    DECLARE
      h credit_holds;
      member_limit bigint;
      used bigint;
      drawn bigint;
    BEGIN
      -- The same run id placed before, or concurrently (the second waits here, then finds the first).
      IF p_run_id IS NOT NULL AND NOT p_run_is_new THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('credit-run:' || p_organization_id || ':' || p_run_id, 0));
        SELECT * INTO h FROM credit_holds c WHERE c.organization_id = p_organization_id AND c.run_id = p_run_id;
        IF FOUND THEN
          RETURN QUERY SELECT
            CASE WHEN h.amount = p_amount AND h.user_id IS NOT DISTINCT FROM p_user_id AND h.reason = p_reason
                      AND h.conversation_id IS NOT DISTINCT FROM p_conversation_id AND h.message_id IS NOT DISTINCT FROM p_message_id
                 THEN 'replayed' ELSE 'run_conflict' END,
            to_jsonb(h), NULL::jsonb;
          RETURN;
        END IF;
      END IF;

      -- The member's limit row is locked, so two holds of one member are checked one after the other.
      SELECT l.spending_limit INTO member_limit FROM credit_member_limits l
       WHERE l.organization_id = p_organization_id AND l.user_id = p_user_id FOR UPDATE;
      IF member_limit IS NOT NULL THEN
        IF p_period_start IS NULL THEN
          RETURN QUERY SELECT 'needs_period', NULL::jsonb, NULL::jsonb;
          RETURN;
        END IF;
        SELECT (SELECT coalesce(sum(e.amount), 0) FROM credit_ledger_entries e
                 WHERE e.organization_id = p_organization_id AND e.user_id = p_user_id AND e.kind = 'capture'
                   AND e.created_at >= p_period_start AND e.created_at < p_period_end)
             + (SELECT coalesce(sum(c.amount - c.captured - c.released), 0) FROM credit_holds c
                 WHERE c.organization_id = p_organization_id AND c.user_id = p_user_id AND c.status = 'held')
          INTO used;
        IF p_amount > greatest(0, member_limit - used) THEN
          RETURN QUERY SELECT 'limit', NULL::jsonb, jsonb_build_object('limit', member_limit, 'used', used);
          RETURN;
        END IF;
      END IF;

      -- Holds never draw on grants past their time (the expiry job usually got there first).
      IF EXISTS (SELECT 1 FROM credit_grants g WHERE g.organization_id = p_organization_id AND g.expired_at IS NULL
                    AND g.expires_at IS NOT NULL AND g.expires_at <= now()) THEN
        RETURN QUERY SELECT 'needs_expiry', NULL::jsonb, NULL::jsonb;
        RETURN;
      END IF;

      -- The gate and the lock (until commit): reserved only if that many credits are available now.
      UPDATE credit_balances b SET held = b.held + p_amount, updated_at = now()
       WHERE b.organization_id = p_organization_id AND b.granted - b.captured - b.held - b.expired >= p_amount;
      IF NOT FOUND THEN
        RETURN QUERY SELECT 'balance', NULL::jsonb,
          jsonb_build_object('available', coalesce((SELECT b.granted - b.captured - b.held - b.expired FROM credit_balances b
                                                    WHERE b.organization_id = p_organization_id), 0));
        RETURN;
      END IF;

      INSERT INTO credit_holds (organization_id, user_id, run_id, reason, amount, conversation_id, message_id, tool_call_id, expires_at)
      VALUES (p_organization_id, p_user_id, p_run_id, p_reason, p_amount, p_conversation_id, p_message_id, p_tool_call_id,
              now() + make_interval(secs => p_expires_in_seconds))
      RETURNING * INTO h;

      -- Draw-down order: earliest expiry first (never-expiring last), then priority, then creation.
      WITH ordered AS (
        SELECT g.id, g.remaining, sum(g.remaining) OVER (ORDER BY g.expires_at ASC NULLS LAST, g.priority ASC, g.seq ASC) AS running
          FROM credit_grants g
         WHERE g.organization_id = p_organization_id AND g.remaining > 0 AND g.expired_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now())
      ), taken AS (
        SELECT o.id, least(o.remaining, p_amount - (o.running - o.remaining)) AS take, o.running FROM ordered o WHERE o.running - o.remaining < p_amount
      ), pieces AS (
        UPDATE credit_grants g SET remaining = g.remaining - taken.take FROM taken WHERE g.id = taken.id
        RETURNING g.id AS grant_id, taken.take AS amount, taken.running
      ), positioned AS (
        SELECT p.grant_id, p.amount, (row_number() OVER (ORDER BY p.running) - 1)::integer AS position FROM pieces p
      ), allocated AS (
        INSERT INTO credit_hold_allocations (hold_id, grant_id, position, amount) SELECT h.id, p.grant_id, p.position, p.amount FROM positioned p
      ), entries AS (
        INSERT INTO credit_ledger_entries (organization_id, kind, amount, from_account, to_account, grant_id, hold_id, user_id,
                                           conversation_id, message_id, tool_call_id, description)
        SELECT p_organization_id, 'hold', p.amount, 'available', 'held', p.grant_id, h.id, p_user_id,
               p_conversation_id, p_message_id, p_tool_call_id, p_description
          FROM positioned p ORDER BY p.position
      )
      SELECT coalesce(sum(p.amount), 0) INTO drawn FROM positioned p;

      -- The balance said the credits are available, so the grants hold them: anything else is a broken ledger.
      IF drawn <> p_amount THEN
        RAISE EXCEPTION 'credit grants of % cover % of % reserved credits', p_organization_id, drawn, p_amount;
      END IF;
      RETURN QUERY SELECT 'reserved', to_jsonb(h), NULL::jsonb;
    END $$;

    CREATE FUNCTION credit_resolve_hold(
      p_hold_id uuid,
      p_capture bigint,                -- credits spent now (0: none)
      p_capture_id uuid,               -- the credit_captures row the capture entries point at (NULL: none)
      p_capture_tool_call_id text,
      p_capture_description text,
      p_capture_metadata jsonb,
      p_final_status text,             -- NULL: the hold stays open (a partial capture); else it resolves, the rest released
      p_resolution text,
      p_release_description text,
      p_release_metadata jsonb
    ) RETURNS SETOF credit_holds LANGUAGE plpgsql AS $$
    DECLARE
      h credit_holds;
      open_credits bigint;
      rest bigint;
      taken_total bigint;
      back_total bigint;
      lapsed bigint;
    BEGIN
      -- The caller locked and checked the hold (lock order: hold → balance → grants).
      SELECT * INTO h FROM credit_holds WHERE id = p_hold_id FOR UPDATE;
      open_credits := h.amount - h.captured - h.released;
      IF h.status <> 'held' OR p_capture < 0 OR p_capture > open_credits THEN
        RAISE EXCEPTION 'hold % cannot capture % credits (status %, % open)', p_hold_id, p_capture, h.status, open_credits;
      END IF;
      rest := CASE WHEN p_final_status IS NULL THEN 0 ELSE open_credits - p_capture END;

      -- The organization's lock, taken only now.
      UPDATE credit_balances SET captured = captured + p_capture, held = held - p_capture - rest, updated_at = now()
       WHERE organization_id = h.organization_id;

      -- Captures consume the hold's reservations in allocation order; a final resolution releases the
      -- rest to the grants it came from, or straight to expired when that grant has expired meanwhile.
      WITH open AS (
        SELECT a.position, a.grant_id, a.amount - a.captured - a.released AS open_amount,
               sum(a.amount - a.captured - a.released) OVER (ORDER BY a.position) AS running,
               (g.expired_at IS NOT NULL OR (g.expires_at IS NOT NULL AND g.expires_at <= now())) AS grant_expired
          FROM credit_hold_allocations a JOIN credit_grants g ON g.id = a.grant_id
         WHERE a.hold_id = p_hold_id AND a.amount - a.captured - a.released > 0
      ), taking AS (
        SELECT position, grant_id, grant_expired, open_amount,
               greatest(0, least(open_amount, p_capture - (running - open_amount))) AS take
          FROM open
      ), split AS (
        SELECT position, grant_id, grant_expired, take,
               CASE WHEN p_final_status IS NULL THEN 0 ELSE open_amount - take END AS back
          FROM taking
      ), allocations AS (
        UPDATE credit_hold_allocations a SET captured = a.captured + s.take, released = a.released + s.back
          FROM split s WHERE a.hold_id = p_hold_id AND a.position = s.position AND (s.take > 0 OR s.back > 0)
      ), returned AS (
        UPDATE credit_grants g SET remaining = g.remaining + r.back
          FROM (SELECT grant_id, sum(back) AS back FROM split WHERE NOT grant_expired AND back > 0 GROUP BY grant_id) r
         WHERE g.id = r.grant_id
      ), entries AS (
        INSERT INTO credit_ledger_entries (organization_id, kind, amount, from_account, to_account, grant_id, hold_id, capture_id,
                                           user_id, conversation_id, message_id, tool_call_id, description, metadata)
        SELECT h.organization_id, e.kind, e.amount, e.from_account, e.to_account, e.grant_id, h.id, e.capture_id,
               h.user_id, h.conversation_id, h.message_id, e.tool_call_id, e.description, e.metadata
          FROM (
            SELECT 1 AS part, position, 'capture' AS kind, take AS amount, 'held' AS from_account, 'spent' AS to_account, grant_id,
                   p_capture_id AS capture_id, coalesce(p_capture_tool_call_id, h.tool_call_id) AS tool_call_id,
                   p_capture_description AS description, coalesce(p_capture_metadata, '{}'::jsonb) AS metadata
              FROM split WHERE take > 0
            UNION ALL
            SELECT 2, position, 'release', back, 'held', 'available', grant_id, NULL, h.tool_call_id,
                   p_release_description, coalesce(p_release_metadata, '{}'::jsonb)
              FROM split WHERE back > 0
            UNION ALL
            SELECT 3, position, 'expiry', back, 'available', 'expired', grant_id, NULL, h.tool_call_id,
                   'Expired: returned to an expired grant', '{}'::jsonb
              FROM split WHERE back > 0 AND grant_expired
          ) e
         ORDER BY e.part, e.position
      )
      SELECT coalesce(sum(take), 0), coalesce(sum(back), 0), coalesce(sum(back) FILTER (WHERE grant_expired), 0)
        INTO taken_total, back_total, lapsed FROM split;

      IF taken_total <> p_capture OR back_total <> rest THEN
        RAISE EXCEPTION 'hold % has % of % credits to capture and % of % to release', p_hold_id, taken_total, p_capture, back_total, rest;
      END IF;
      IF lapsed > 0 THEN
        UPDATE credit_balances SET expired = expired + lapsed WHERE organization_id = h.organization_id;
      END IF;

      UPDATE credit_holds
         SET captured = captured + p_capture,
             released = CASE WHEN p_final_status IS NULL THEN released ELSE amount - captured - p_capture END,
             status = coalesce(p_final_status, status),
             resolution = CASE WHEN p_final_status IS NULL THEN resolution ELSE p_resolution END,
             resolved_at = CASE WHEN p_final_status IS NULL THEN resolved_at ELSE now() END
       WHERE id = p_hold_id
      RETURNING * INTO h;
      RETURN NEXT h;
    END $$;

    -- A capture, whole: the hold locked, replays and state checked, the capture row, then the
    -- resolution step. Outcomes: captured (hold, capture), replayed (the earlier capture of the key),
    -- capture_conflict (that capture differs), not_found, resolved (the hold is no longer open),
    -- expired (past its time), exceeds (detail: left). Nothing is written unless captured.
    CREATE FUNCTION credit_capture(
      p_hold_id uuid, p_amount bigint, p_capture_key text, p_tool_call_id text, p_description text, p_metadata jsonb, p_final boolean
    ) RETURNS TABLE (outcome text, hold jsonb, capture jsonb) LANGUAGE plpgsql AS $$
    DECLARE
      h credit_holds;
      c credit_captures;
      overdue boolean;
    BEGIN
      SELECT * INTO h FROM credit_holds WHERE id = p_hold_id FOR UPDATE;
      IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found', NULL::jsonb, NULL::jsonb;
        RETURN;
      END IF;
      IF p_capture_key IS NOT NULL THEN
        SELECT * INTO c FROM credit_captures k WHERE k.hold_id = p_hold_id AND k.capture_key = p_capture_key;
        IF FOUND THEN
          RETURN QUERY SELECT
            CASE WHEN c.amount = p_amount AND (p_tool_call_id IS NULL OR c.tool_call_id IS NOT DISTINCT FROM p_tool_call_id)
                 THEN 'replayed' ELSE 'capture_conflict' END,
            to_jsonb(h), to_jsonb(c);
          RETURN;
        END IF;
      END IF;
      IF h.status <> 'held' THEN
        RETURN QUERY SELECT 'resolved', to_jsonb(h), NULL::jsonb;
        RETURN;
      END IF;
      overdue := h.expires_at <= now();
      IF overdue THEN
        RETURN QUERY SELECT 'expired', to_jsonb(h), NULL::jsonb;
        RETURN;
      END IF;
      IF p_amount > h.amount - h.captured - h.released THEN
        RETURN QUERY SELECT 'exceeds', to_jsonb(h), NULL::jsonb;
        RETURN;
      END IF;
      INSERT INTO credit_captures (hold_id, capture_key, amount, tool_call_id, description)
      VALUES (p_hold_id, p_capture_key, p_amount, p_tool_call_id, p_description)
      RETURNING * INTO c;
      SELECT * INTO h FROM credit_resolve_hold(
        p_hold_id, p_amount, c.id, p_tool_call_id, coalesce(p_description, 'Used for ' || h.reason), p_metadata,
        CASE WHEN p_final THEN 'captured' END, CASE WHEN p_final THEN 'capture' END, 'Released: not used', '{}'::jsonb);
      RETURN QUERY SELECT 'captured', to_jsonb(h), to_jsonb(c);
    END $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION credit_capture(uuid, bigint, text, text, text, jsonb, boolean);
    DROP FUNCTION credit_resolve_hold(uuid, bigint, uuid, text, text, jsonb, text, text, text, jsonb);
    DROP FUNCTION credit_reserve(text, text, text, boolean, text, bigint, text, text, text, integer, text, timestamptz, timestamptz);
  `);
}
