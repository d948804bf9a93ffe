import type { Knex } from 'knex';
import { up as holdFunctions } from './20261123060000_credit_hold_functions.ts';
import { up as resolveOutsideLock } from './20261127142100_credit_resolve_outside_lock.ts';

/**
 * Fewer writes under an organization's lock (issue 21): grants are attributed when credits are
 * spent, not when they are reserved.
 *
 * Before, a hold wrote five rows while every other hold and capture of the organization waited on
 * its balance row: the balance, the hold, a grant (its `remaining` drawn down), an allocation (which
 * grants the hold reserved) and a ledger row per grant; a capture then consumed the allocations and
 * gave the rest back to the grants. Now a hold is one statement that moves `held` on the balance row
 * (the gate), writes the hold and one ledger row (available → held, no grant); a capture draws what
 * it spends from the grants in draw-down order (earliest expiry first, never-expiring last, then
 * priority, then creation) and writes one ledger row per grant drawn; a release writes one row.
 *
 * What a grant's `remaining` means changes with it: the credits of the grant not yet spent, expired
 * or taken back — reserved credits still count in it. Open holds are covered by the front of the
 * draw-down order: of the organization's `held` credits, the first grants in that order hold them
 * (the API presents a grant's `remaining` without that covered part, as before). When a grant
 * expires, the part of it that open holds cover stays on it ("lingering", summed on the balance
 * row) until they resolve: captures spend lingering credits first, and whatever lingering credits
 * exceed what is still held after a release lapse then (available → expired). The balance's CHECK
 * `lingering <= held` keeps that exact. `reconcileCredits` checks grants against the ledger rows
 * that carry their id (issued in; spent, expired and taken back out) and `lingering` against the
 * expired grants' `remaining`.
 *
 * Existing data: every open hold's unconsumed allocations are folded back into their grants' (and,
 * on expired grants, into the balance's `lingering`), then the allocations table goes.
 *
 * And the ledger's references to holds and captures are no longer foreign keys: every ledger row
 * naming a hold (or a capture) is written by these functions in the transaction that wrote or
 * locked that row, and each check was a query run under the organization's lock (three per hold
 * and capture, ≈ 0.15–0.2 ms each on the loaded bench box). Holds and captures are never deleted
 * but with their organization's balance row, which the ledger's own foreign key keeps.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE credit_balances ADD COLUMN lingering bigint NOT NULL DEFAULT 0;

    UPDATE credit_grants g SET remaining = g.remaining + o.open
      FROM (SELECT a.grant_id, sum(a.amount - a.captured - a.released) AS open
              FROM credit_hold_allocations a JOIN credit_holds h ON h.id = a.hold_id
             WHERE h.status = 'held' GROUP BY a.grant_id) o
     WHERE g.id = o.grant_id AND o.open > 0;
    UPDATE credit_balances b SET lingering = l.total
      FROM (SELECT organization_id, sum(remaining) AS total FROM credit_grants
             WHERE expired_at IS NOT NULL AND remaining > 0 GROUP BY organization_id) l
     WHERE b.organization_id = l.organization_id;
    ALTER TABLE credit_balances ADD CONSTRAINT credit_balances_lingering_held CHECK (lingering >= 0 AND lingering <= held);

    DROP FUNCTION credit_capture(uuid, bigint, text, text, text, jsonb, boolean);
    DROP FUNCTION credit_resolve_hold(uuid, bigint, uuid, text, text, jsonb, text, text, text, jsonb);
    DROP FUNCTION credit_reserve(text, text, text, boolean, text, bigint, text, text, text, integer, text, timestamptz, timestamptz);
    DROP TABLE credit_hold_allocations;
    ALTER TABLE credit_ledger_entries DROP CONSTRAINT credit_ledger_entries_hold_id_fkey,
      DROP CONSTRAINT credit_ledger_entries_capture_id_fkey;

    -- Expired grants still covering open holds, found only when the balance says there are some.
    CREATE INDEX credit_grants_lingering_idx ON credit_grants (organization_id) WHERE expired_at IS NOT NULL;

    -- Takes p_amount off the grants' remaining, in draw-down order after skipping the first p_skip
    -- credits of that order; lingering credits (expired grants') come first when asked for. Call
    -- with the organization's balance row locked (in a statement after the one that locked it, so
    -- it sees what the previous holder wrote). The caller checks that the pieces add up.
    CREATE FUNCTION credit_draw(p_organization_id text, p_amount bigint, p_skip bigint, p_with_lingering boolean)
    RETURNS TABLE (grant_id uuid, amount bigint, running numeric) LANGUAGE plpgsql AS $$
    BEGIN
      IF p_amount <= 0 THEN
        RETURN;
      END IF;
      RETURN QUERY
      WITH pool AS (
        SELECT g.id, g.remaining, true AS live, g.expires_at, g.priority, g.seq FROM credit_grants g
         WHERE g.organization_id = p_organization_id AND g.expired_at IS NULL AND g.remaining > 0
        UNION ALL
        SELECT g.id, g.remaining, false, g.expires_at, g.priority, g.seq FROM credit_grants g
         WHERE p_with_lingering AND g.organization_id = p_organization_id AND g.expired_at IS NOT NULL AND g.remaining > 0
      ), ordered AS (
        SELECT p.id, p.remaining, sum(p.remaining) OVER (ORDER BY p.live, p.expires_at ASC NULLS LAST, p.priority ASC, p.seq ASC) AS running FROM pool p
      ), taken AS (
        SELECT o.id, (least(o.running, p_skip + p_amount) - greatest(o.running - o.remaining, p_skip))::bigint AS take, o.running
          FROM ordered o WHERE o.running > p_skip AND o.running - o.remaining < p_skip + p_amount
      )
      UPDATE credit_grants g SET remaining = g.remaining - t.take FROM taken t WHERE g.id = t.id
      RETURNING g.id, t.take, t.running;
    END $$;

    -- A hold, whole: replay check, spending limit, then one statement that gates, reserves and records.
    -- Outcomes as before: reserved (detail: available, after the hold), replayed, run_conflict, limit,
    -- balance, needs_period, needs_expiry.
    CREATE FUNCTION credit_reserve(
      p_organization_id text, p_user_id text, p_run_id text, p_run_is_new boolean, p_reason text, p_amount bigint,
      p_conversation_id text, p_message_id text, p_tool_call_id text, p_expires_in_seconds integer, p_description text,
      p_period_start timestamptz, p_period_end timestamptz
    ) RETURNS TABLE (outcome text, hold jsonb, detail jsonb) LANGUAGE plpgsql AS $$
    DECLARE
      h credit_holds;
      placed_hold jsonb;
      left_over bigint;
      member_limit bigint;
      used bigint;
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

      -- Holds never count credits past their time (the expiry job usually got there first).
      IF EXISTS (SELECT 1 FROM credit_grants g WHERE g.organization_id = p_organization_id AND g.expired_at IS NULL
                    AND g.expires_at IS NOT NULL AND g.expires_at <= now()) THEN
        RETURN QUERY SELECT 'needs_expiry', NULL::jsonb, NULL::jsonb;
        RETURN;
      END IF;

      -- The gate and the lock (until commit), the hold and its ledger row: one statement. It reads
      -- nothing another hold writes but the balance row, which the UPDATE re-checks after its wait,
      -- so one snapshot is enough; refused, it writes nothing.
      WITH gate AS (
        UPDATE credit_balances b SET held = b.held + p_amount, updated_at = now()
         WHERE b.organization_id = p_organization_id AND b.granted - b.captured - b.held - b.expired >= p_amount
        RETURNING b.organization_id, b.granted - b.captured - b.held - b.expired AS available
      ), placed AS (
        INSERT INTO credit_holds (organization_id, user_id, run_id, reason, amount, conversation_id, message_id, tool_call_id, expires_at)
        SELECT gate.organization_id, p_user_id, p_run_id, p_reason, p_amount, p_conversation_id, p_message_id, p_tool_call_id,
               now() + make_interval(secs => p_expires_in_seconds)
          FROM gate
        RETURNING *
      ), entry AS (
        INSERT INTO credit_ledger_entries (organization_id, kind, amount, from_account, to_account, hold_id, user_id,
                                           conversation_id, message_id, tool_call_id, description)
        SELECT p.organization_id, 'hold', p.amount, 'available', 'held', p.id, p.user_id, p.conversation_id, p.message_id, p.tool_call_id, p_description
          FROM placed p
      )
      SELECT to_jsonb(p), g.available INTO placed_hold, left_over FROM placed p, gate g;
      IF NOT FOUND THEN
        RETURN QUERY SELECT 'balance', NULL::jsonb,
          jsonb_build_object('available', coalesce((SELECT b.granted - b.captured - b.held - b.expired FROM credit_balances b
                                                    WHERE b.organization_id = p_organization_id), 0));
        RETURN;
      END IF;
      RETURN QUERY SELECT 'reserved', placed_hold, jsonb_build_object('available', left_over);
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
      lingering_before bigint := 0;
      lingering_after bigint;
      held_after bigint;
      lapse bigint := 0;
      drawn bigint;
    BEGIN
      -- The caller locked and checked the hold (lock order: hold → balance → grants).
      SELECT * INTO h FROM credit_holds WHERE id = p_hold_id FOR UPDATE;
      open_credits := h.amount - h.captured - h.released;
      IF h.status <> 'held' OR p_capture < 0 OR p_capture > open_credits THEN
        RAISE EXCEPTION 'hold % cannot capture % credits (status %, % open)', p_hold_id, p_capture, h.status, open_credits;
      END IF;
      rest := CASE WHEN p_final_status IS NULL THEN 0 ELSE open_credits - p_capture END;

      -- First the hold's own row, which only its (locked) row guards.
      UPDATE credit_holds
         SET captured = captured + p_capture,
             released = CASE WHEN p_final_status IS NULL THEN released ELSE amount - captured - p_capture END,
             status = coalesce(p_final_status, status),
             resolution = CASE WHEN p_final_status IS NULL THEN resolution ELSE p_resolution END,
             resolved_at = CASE WHEN p_final_status IS NULL THEN resolved_at ELSE now() END
       WHERE id = p_hold_id
      RETURNING * INTO h;

      -- The organization's lock, taken only now (until commit). Usually no expired grant lingers, and
      -- the balance moves in this one statement; the condition is re-checked after the lock wait.
      UPDATE credit_balances SET captured = captured + p_capture, held = held - p_capture - rest, updated_at = now()
       WHERE organization_id = h.organization_id AND lingering = 0;
      IF NOT FOUND THEN
        -- Lingering credits: captures spend them first, and what of them exceeds what is still held lapses.
        SELECT b.lingering, b.held - p_capture - rest INTO lingering_before, held_after
          FROM credit_balances b WHERE b.organization_id = h.organization_id FOR UPDATE;
        lingering_after := lingering_before - least(lingering_before, p_capture);
        lapse := greatest(0, lingering_after - held_after);
        lingering_after := lingering_after - lapse;
        UPDATE credit_balances
           SET captured = captured + p_capture, held = held_after, lingering = lingering_after, expired = expired + lapse, updated_at = now()
         WHERE organization_id = h.organization_id;
      END IF;

      -- What the capture spends, drawn from the grants; what the resolution gives back, one row.
      WITH pieces AS (
        SELECT d.grant_id, d.amount, d.running FROM credit_draw(h.organization_id, p_capture, 0, lingering_before > 0) d
      ), entries AS (
        INSERT INTO credit_ledger_entries (organization_id, kind, amount, from_account, to_account, grant_id, hold_id, capture_id,
                                           user_id, conversation_id, message_id, tool_call_id, description, metadata)
        SELECT h.organization_id, e.kind, e.amount, e.from_account, e.to_account, e.grant_id, h.id, e.capture_id,
               h.user_id, h.conversation_id, h.message_id, e.tool_call_id, e.description, e.metadata
          FROM (
            SELECT 1 AS part, p.running AS position, 'capture' AS kind, p.amount, 'held' AS from_account, 'spent' AS to_account, p.grant_id,
                   p_capture_id AS capture_id, coalesce(p_capture_tool_call_id, h.tool_call_id) AS tool_call_id,
                   p_capture_description AS description, coalesce(p_capture_metadata, '{}'::jsonb) AS metadata
              FROM pieces p
            UNION ALL
            SELECT 2, 0, 'release', rest, 'held', 'available', NULL, NULL, h.tool_call_id,
                   p_release_description, coalesce(p_release_metadata, '{}'::jsonb)
             WHERE rest > 0
          ) e
         ORDER BY e.part, e.position
        RETURNING kind, amount
      )
      SELECT coalesce(sum(e.amount) FILTER (WHERE e.kind = 'capture'), 0) INTO drawn FROM entries e;
      -- The balance said these credits are held, so the grants have them: anything else is a broken ledger.
      IF drawn <> p_capture THEN
        RAISE EXCEPTION 'credit grants of % cover % of % captured credits', h.organization_id, drawn, p_capture;
      END IF;

      -- The lapse comes off the last lingering credits (the covered front of the order shrank from its end).
      IF lapse > 0 THEN
        WITH pieces AS (
          SELECT d.grant_id, d.amount, d.running FROM credit_draw(h.organization_id, lapse, lingering_after, true) d
        ), entries AS (
          INSERT INTO credit_ledger_entries (organization_id, kind, amount, from_account, to_account, grant_id, hold_id,
                                             user_id, conversation_id, message_id, tool_call_id, description)
          SELECT h.organization_id, 'expiry', p.amount, 'available', 'expired', p.grant_id, h.id,
                 h.user_id, h.conversation_id, h.message_id, h.tool_call_id, 'Expired: released credits of an expired grant'
            FROM pieces p ORDER BY p.running
          RETURNING amount
        )
        SELECT coalesce(sum(e.amount), 0) INTO drawn FROM entries e;
        IF drawn <> lapse THEN
          RAISE EXCEPTION 'expired grants of % hold % of % lapsing credits', h.organization_id, drawn, lapse;
        END IF;
      END IF;
      RETURN NEXT h;
    END $$;

    -- A capture, whole (unchanged): the hold locked, replays and state checked, the capture row, then
    -- the resolution step. Outcomes: captured, replayed, capture_conflict, not_found, resolved, expired,
    -- exceeds. Nothing is written unless captured.
    CREATE FUNCTION credit_capture(
      p_hold_id uuid, p_amount bigint, p_capture_key text, p_tool_call_id text, p_description text, p_metadata jsonb, p_final boolean
    ) RETURNS TABLE (outcome text, hold jsonb, capture jsonb) LANGUAGE plpgsql AS $$
    DECLARE
      h credit_holds;
      c credit_captures;
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
      IF h.expires_at <= now() THEN
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

/**
 * Back to attribution at hold time. Only while no hold is open and no expired grant lingers: the
 * allocations an open hold would need were never written.
 */
export async function down(knex: Knex): Promise<void> {
  const { rows } = await knex.raw(
    `SELECT (SELECT count(*) FROM credit_holds WHERE status = 'held') + (SELECT count(*) FROM credit_balances WHERE lingering > 0) AS n`,
  );
  if (Number(rows[0].n) > 0) throw new Error('credit holds are open or expired grants linger: resolve them before migrating down');
  await knex.raw(`
    DROP FUNCTION credit_capture(uuid, bigint, text, text, text, jsonb, boolean);
    DROP FUNCTION credit_resolve_hold(uuid, bigint, uuid, text, text, jsonb, text, text, text, jsonb);
    DROP FUNCTION credit_reserve(text, text, text, boolean, text, bigint, text, text, text, integer, text, timestamptz, timestamptz);
    DROP FUNCTION credit_draw(text, bigint, bigint, boolean);
    DROP INDEX credit_grants_lingering_idx;
    ALTER TABLE credit_balances DROP COLUMN lingering;
    ALTER TABLE credit_ledger_entries ADD CONSTRAINT credit_ledger_entries_hold_id_fkey FOREIGN KEY (hold_id) REFERENCES credit_holds (id),
      ADD CONSTRAINT credit_ledger_entries_capture_id_fkey FOREIGN KEY (capture_id) REFERENCES credit_captures (id);
    CREATE TABLE credit_hold_allocations (
      hold_id uuid NOT NULL REFERENCES credit_holds (id) ON DELETE CASCADE,
      grant_id uuid NOT NULL REFERENCES credit_grants (id) ON DELETE CASCADE,
      position integer NOT NULL,
      amount bigint NOT NULL CHECK (amount > 0),
      captured bigint NOT NULL DEFAULT 0,
      released bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (hold_id, position),
      CHECK (captured >= 0 AND released >= 0 AND captured + released <= amount)
    );
  `);
  await holdFunctions(knex);
  await resolveOutsideLock(knex);
}
