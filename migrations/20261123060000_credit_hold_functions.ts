import type { Knex } from 'knex';

/**
 * The locked part of every hold and every capture, as one statement each (issue 9).
 *
 * An organization's balance row is its lock: every hold, capture and release of the organization
 * waits on it until the holder commits. Before, the holder made four to seven round trips while
 * holding it (reserve, insert the hold, draw the grants, insert allocations, insert ledger rows;
 * or move, capture pieces one by one, release pieces, update grants, entries, the hold). Now the
 * application makes one call, and everything between taking the lock and returning runs inside the
 * server.
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
    CREATE FUNCTION credit_reserve(
      p_organization_id text, p_user_id text, p_run_id text, p_reason text, p_amount bigint,
      p_conversation_id text, p_message_id text, p_tool_call_id text, p_expires_in_seconds integer, p_description text
    ) RETURNS SETOF credit_holds LANGUAGE plpgsql AS $$
    DECLARE
      h credit_holds;
      drawn bigint;
    BEGIN
      -- The gate and the lock (until commit): reserved only if that many credits are available now.
      UPDATE credit_balances SET held = held + p_amount, updated_at = now()
       WHERE organization_id = p_organization_id AND granted - captured - held - expired >= p_amount;
      IF NOT FOUND THEN
        RETURN;  -- no row: the caller answers 402, nothing was written
      END IF;

      INSERT INTO credit_holds (organization_id, user_id, run_id, reason, amount, conversation_id, message_id, tool_call_id, expires_at)
      VALUES (p_organization_id, p_user_id, p_run_id, p_reason, p_amount, p_conversation_id, p_message_id, p_tool_call_id,
              now() + make_interval(secs => p_expires_in_seconds))
      RETURNING * INTO h;

      -- Draw-down order: earliest expiry first (never-expiring last), then priority, then creation.
      WITH ordered AS (
        SELECT id, remaining, sum(remaining) OVER (ORDER BY expires_at ASC NULLS LAST, priority ASC, seq ASC) AS running
          FROM credit_grants
         WHERE organization_id = p_organization_id AND remaining > 0 AND expired_at IS NULL AND (expires_at IS NULL OR expires_at > now())
      ), taken AS (
        SELECT id, least(remaining, p_amount - (running - remaining)) AS take, running FROM ordered WHERE running - remaining < p_amount
      ), pieces AS (
        UPDATE credit_grants g SET remaining = g.remaining - taken.take FROM taken WHERE g.id = taken.id
        RETURNING g.id AS grant_id, taken.take AS amount, taken.running
      ), positioned AS (
        SELECT grant_id, amount, (row_number() OVER (ORDER BY running) - 1)::integer AS position FROM pieces
      ), allocated AS (
        INSERT INTO credit_hold_allocations (hold_id, grant_id, position, amount) SELECT h.id, grant_id, position, amount FROM positioned
      ), entries AS (
        INSERT INTO credit_ledger_entries (organization_id, kind, amount, from_account, to_account, grant_id, hold_id, user_id,
                                           conversation_id, message_id, tool_call_id, description)
        SELECT p_organization_id, 'hold', amount, 'available', 'held', grant_id, h.id, p_user_id,
               p_conversation_id, p_message_id, p_tool_call_id, p_description
          FROM positioned ORDER BY position
      )
      SELECT coalesce(sum(amount), 0) INTO drawn FROM positioned;

      -- The balance said the credits are available, so the grants hold them: anything else is a broken ledger.
      IF drawn <> p_amount THEN
        RAISE EXCEPTION 'credit grants of % cover % of % reserved credits', p_organization_id, drawn, p_amount;
      END IF;
      RETURN NEXT h;
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
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION credit_resolve_hold(uuid, bigint, uuid, text, text, jsonb, text, text, text, jsonb);
    DROP FUNCTION credit_reserve(text, text, text, text, bigint, text, text, text, integer, text);
  `);
}
