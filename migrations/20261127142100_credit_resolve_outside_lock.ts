import type { Knex } from 'knex';

/**
 * A capture, release, settle or expiry holds the organization's balance row (its lock) for less
 * (issue 21). Before, `credit_resolve_hold` took that lock first and then, while every other hold
 * and capture of the organization waited, consumed the hold's allocations and rewrote the hold row
 * (a non-HOT update: its status leaves the partial indexes). Those rows are the hold's own, guarded
 * by the hold row the caller has locked, so they now come first; under the organization's lock
 * remain only what is the organization's: the balance, the grants the rest returns to (whether a
 * grant has expired is still decided under the lock, as expiry decides it) and the ledger rows.
 * Same signature, same rows written, same outcomes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION credit_resolve_hold(
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
      positions integer[];
      grant_ids uuid[];
      takes bigint[];
      backs bigint[];
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

      -- First the hold's own rows, which only this hold's (locked) row guards: captures consume its
      -- reservations in allocation order, a final resolution releases the rest of each.
      WITH open AS (
        SELECT a.position, a.grant_id, a.amount - a.captured - a.released AS open_amount,
               sum(a.amount - a.captured - a.released) OVER (ORDER BY a.position) AS running
          FROM credit_hold_allocations a
         WHERE a.hold_id = p_hold_id AND a.amount - a.captured - a.released > 0
      ), taking AS (
        SELECT position, grant_id, open_amount, greatest(0, least(open_amount, p_capture - (running - open_amount))) AS take FROM open
      ), split AS (
        SELECT position, grant_id, take, CASE WHEN p_final_status IS NULL THEN 0 ELSE open_amount - take END AS back FROM taking
      ), moved AS (
        UPDATE credit_hold_allocations a SET captured = a.captured + s.take, released = a.released + s.back
          FROM split s WHERE a.hold_id = p_hold_id AND a.position = s.position AND (s.take > 0 OR s.back > 0)
        RETURNING s.position, s.grant_id, s.take, s.back
      )
      SELECT array_agg(m.position ORDER BY m.position), array_agg(m.grant_id ORDER BY m.position),
             array_agg(m.take ORDER BY m.position), array_agg(m.back ORDER BY m.position),
             coalesce(sum(m.take), 0), coalesce(sum(m.back), 0)
        INTO positions, grant_ids, takes, backs, taken_total, back_total FROM moved m;
      IF taken_total <> p_capture OR back_total <> rest THEN
        RAISE EXCEPTION 'hold % has % of % credits to capture and % of % to release', p_hold_id, taken_total, p_capture, back_total, rest;
      END IF;

      UPDATE credit_holds
         SET captured = captured + p_capture,
             released = CASE WHEN p_final_status IS NULL THEN released ELSE amount - captured - p_capture END,
             status = coalesce(p_final_status, status),
             resolution = CASE WHEN p_final_status IS NULL THEN resolution ELSE p_resolution END,
             resolved_at = CASE WHEN p_final_status IS NULL THEN resolved_at ELSE now() END
       WHERE id = p_hold_id
      RETURNING * INTO h;

      -- Only now the organization's lock (until the commit): the balance, the grants the rest goes back
      -- to (or straight to expired when that grant has expired meanwhile: decided under the lock, as
      -- expiry decides), and the ledger rows, whose foreign keys point at rows this transaction holds.
      UPDATE credit_balances SET captured = captured + p_capture, held = held - p_capture - rest, updated_at = now()
       WHERE organization_id = h.organization_id;

      WITH split AS (
        SELECT u.position, u.grant_id, u.take, u.back,
               (g.expired_at IS NOT NULL OR (g.expires_at IS NOT NULL AND g.expires_at <= now())) AS grant_expired
          FROM unnest(positions, grant_ids, takes, backs) AS u(position, grant_id, take, back)
          JOIN credit_grants g ON g.id = u.grant_id
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
      SELECT coalesce(sum(back) FILTER (WHERE grant_expired), 0) INTO lapsed FROM split;
      IF lapsed > 0 THEN
        UPDATE credit_balances SET expired = expired + lapsed WHERE organization_id = h.organization_id;
      END IF;
      RETURN NEXT h;
    END $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION credit_resolve_hold(
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
