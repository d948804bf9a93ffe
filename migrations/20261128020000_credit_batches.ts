import type { Knex } from 'knex';

/**
 * Holds and captures in batches (issue 21): one statement, one transaction and one commit for the
 * holds (or captures) that callers of one process sent while the previous batch was in flight
 * (src/credits/batches.ts). An organization's balance row is then locked once per batch instead of
 * once per hold, and handed from one waiting backend to the next once per batch — on a hot
 * organization that hand-over, not the work, was most of the time.
 *
 * Each item is decided exactly as `credit_reserve` / `credit_capture` alone decide it (they are
 * called, unchanged, one item after the other), in the callers' order within an organization. The
 * batch only adds the lock order: every lock a hold or capture takes before the balance row is
 * taken for the whole batch first, each kind in one order, and then the balance rows in
 * organization order. A batch therefore never waits for another lock while it holds a balance row,
 * so two batches, or a batch and a single hold or capture, cannot deadlock.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- The hold of a run: in the organization, with that run id, of that reason (null: any), placed by
    -- that member (null: by anyone). How a capture, settle or release names a hold it has no id of.
    CREATE FUNCTION credit_hold_of_run(p_organization_id text, p_run_id text, p_reason text, p_user_id text) RETURNS uuid
    LANGUAGE sql STABLE AS $$
      SELECT r.id FROM credit_holds r
       WHERE r.organization_id = p_organization_id AND r.run_id = p_run_id
         AND (p_reason IS NULL OR r.reason = p_reason) AND (p_user_id IS NULL OR r.user_id = p_user_id)
    $$;

    -- p_items: a JSON array of credit_reserve's thirteen arguments, in order, per hold. One row per
    -- item: its position in p_items (1-based) and credit_reserve's answer.
    CREATE FUNCTION credit_reserve_batch(p_items jsonb) RETURNS TABLE (idx integer, outcome text, hold jsonb, detail jsonb) LANGUAGE plpgsql AS $$
    DECLARE
      i record;
      o record;
      left_over bigint;
      gated text[] := '{}';
      gated_left bigint[] := '{}';
    BEGIN
      -- Before any balance row: the run locks (a replayable run id), then the members' limit rows.
      FOR i IN
        SELECT DISTINCT hashtextextended('credit-run:' || (e.item->>0) || ':' || (e.item->>2), 0) AS run_key
          FROM jsonb_array_elements(p_items) e(item)
         WHERE e.item->>2 IS NOT NULL AND NOT (e.item->>3)::boolean
         ORDER BY 1
      LOOP
        PERFORM pg_advisory_xact_lock(i.run_key);
      END LOOP;
      PERFORM 1 FROM credit_member_limits l
        WHERE (l.organization_id, l.user_id) IN (SELECT e.item->>0, e.item->>1 FROM jsonb_array_elements(p_items) e(item))
        ORDER BY l.organization_id, l.user_id FOR UPDATE;

      -- Then organization by organization, in organization order. When none of an organization's holds
      -- here has a run id to replay or a member's limit to meet, no grant of it is past its time and all
      -- of them fit, one UPDATE reserves them all (what credit_reserve's gate does for each, summed;
      -- their rows are written below). Otherwise each is decided alone by credit_reserve.
      FOR o IN
        SELECT e.item->>0 AS organization_id, sum((e.item->>5)::bigint)::bigint AS total,
               bool_and((e.item->>2 IS NULL OR (e.item->>3)::boolean)
                        AND NOT EXISTS (SELECT 1 FROM credit_member_limits l WHERE l.organization_id = e.item->>0 AND l.user_id = e.item->>1)) AS plain
          FROM jsonb_array_elements(p_items) e(item) GROUP BY 1 ORDER BY 1
      LOOP
        IF o.plain AND NOT EXISTS (SELECT 1 FROM credit_grants g WHERE g.organization_id = o.organization_id AND g.expired_at IS NULL
                                      AND g.expires_at IS NOT NULL AND g.expires_at <= now()) THEN
          UPDATE credit_balances b SET held = b.held + o.total, updated_at = now()
           WHERE b.organization_id = o.organization_id AND b.granted - b.captured - b.held - b.expired >= o.total
          RETURNING b.granted - b.captured - b.held - b.expired INTO left_over;
          IF FOUND THEN
            gated := gated || o.organization_id;
            gated_left := gated_left || left_over;
            CONTINUE;
          END IF;
        END IF;
        FOR i IN SELECT e.item, e.n FROM jsonb_array_elements(p_items) WITH ORDINALITY e(item, n) WHERE e.item->>0 = o.organization_id ORDER BY e.n LOOP
          RETURN QUERY SELECT i.n::integer, r.outcome, r.hold, r.detail FROM credit_reserve(
            i.item->>0, i.item->>1, i.item->>2, (i.item->>3)::boolean, i.item->>4, (i.item->>5)::bigint,
            i.item->>6, i.item->>7, i.item->>8, (i.item->>9)::integer, i.item->>10,
            (i.item->>11)::timestamptz, (i.item->>12)::timestamptz) r;
        END LOOP;
      END LOOP;

      -- The holds reserved together: their rows and ledger rows as credit_reserve writes them, in the
      -- callers' order, each answering what was available right after it, as if placed alone.
      RETURN QUERY
      WITH items AS (
        SELECT e.n::integer AS n, e.item, gen_random_uuid() AS id,
               g.left_over + sum((e.item->>5)::bigint) OVER (PARTITION BY g.organization_id ORDER BY e.n DESC) - (e.item->>5)::bigint AS available
          FROM jsonb_array_elements(p_items) WITH ORDINALITY e(item, n)
          JOIN unnest(gated, gated_left) g(organization_id, left_over) ON g.organization_id = e.item->>0
      ), placed AS (
        INSERT INTO credit_holds (id, organization_id, user_id, run_id, reason, amount, conversation_id, message_id, tool_call_id, expires_at)
        SELECT t.id, t.item->>0, t.item->>1, t.item->>2, t.item->>4, (t.item->>5)::bigint, t.item->>6, t.item->>7, t.item->>8,
               now() + make_interval(secs => (t.item->>9)::integer)
          FROM items t ORDER BY t.n
        RETURNING *
      ), entries AS (
        INSERT INTO credit_ledger_entries (organization_id, kind, amount, from_account, to_account, hold_id, user_id,
                                           conversation_id, message_id, tool_call_id, description)
        SELECT p.organization_id, 'hold', p.amount, 'available', 'held', p.id, p.user_id, p.conversation_id, p.message_id, p.tool_call_id, t.item->>10
          FROM placed p JOIN items t ON t.id = p.id ORDER BY t.n
      )
      SELECT t.n, 'reserved'::text, to_jsonb(p), jsonb_build_object('available', t.available) FROM placed p JOIN items t ON t.id = p.id;
    END $$;

    -- p_items: a JSON array of captures, each [hold id, or null and the hold found by organization id,
    -- run id, reason (null: any) and member (null: any); amount, capture key, tool call id,
    -- description, metadata, final] — credit_capture's arguments after the hold. One row per item:
    -- its position (1-based) and credit_capture's answer (not_found when no hold matches).
    CREATE FUNCTION credit_capture_batch(p_items jsonb) RETURNS TABLE (idx integer, outcome text, hold jsonb, capture jsonb) LANGUAGE plpgsql AS $$
    DECLARE
      ids uuid[];
      capture_ids uuid[];
      rests bigint[];
      i record;
      o record;
      drawn bigint;
    BEGIN
      SELECT array_agg(coalesce((e.item->>0)::uuid, credit_hold_of_run(e.item->>1, e.item->>2, e.item->>3, e.item->>4)) ORDER BY e.n)
        INTO ids FROM jsonb_array_elements(p_items) WITH ORDINALITY e(item, n);
      -- Before any balance row: every hold of the batch, in id order.
      PERFORM 1 FROM credit_holds h WHERE h.id = ANY (ids) ORDER BY h.id FOR UPDATE;

      -- One by one (credit_capture, in organization order) unless every item is a plain capture: its
      -- hold found, open, in time, with enough left and nothing captured under its key yet; each hold
      -- once; no organization with lingering credits.
      -- (Every lookup of the batch's holds names them all with = ANY, so it is planned as an index scan,
      -- not as a hash of the whole table; the capture keys per item, LATERAL, for the same reason.)
      IF EXISTS (
           SELECT 1 FROM jsonb_array_elements(p_items) WITH ORDINALITY e(item, n)
             LEFT JOIN credit_holds h ON h.id = ANY (ids) AND h.id = ids[e.n]
             LEFT JOIN credit_balances b ON b.organization_id = h.organization_id
             LEFT JOIN LATERAL (SELECT 1 AS found FROM credit_captures k WHERE k.hold_id = h.id AND k.capture_key = e.item->>6 LIMIT 1) k ON true
            WHERE h.id IS NULL OR h.status <> 'held' OR h.expires_at <= now()
               OR (e.item->>5)::bigint NOT BETWEEN 0 AND h.amount - h.captured - h.released
               OR k.found IS NOT NULL OR b.lingering > 0)
         OR (SELECT count(DISTINCT x) <> count(x) FROM unnest(ids) x) THEN
        FOR i IN
          SELECT e.item, e.n, ids[e.n] AS hold_id FROM jsonb_array_elements(p_items) WITH ORDINALITY e(item, n)
            LEFT JOIN credit_holds h ON h.id = ANY (ids) AND h.id = ids[e.n]
           ORDER BY h.organization_id, e.n
        LOOP
          RETURN QUERY SELECT i.n::integer, c.outcome, c.hold, c.capture FROM credit_capture(
            i.hold_id, (i.item->>5)::bigint, i.item->>6, i.item->>7, i.item->>8, i.item->9, (i.item->>10)::boolean) c;
        END LOOP;
        RETURN;
      END IF;

      -- All at once: the capture rows, the holds (a final capture releases the rest) ...
      WITH t AS (
        SELECT e.n, h.id AS hold_id, (e.item->>5)::bigint AS amount, e.item->>6 AS capture_key, e.item->>7 AS tool_call_id,
               e.item->>8 AS description, (e.item->>10)::boolean AS final,
               CASE WHEN (e.item->>10)::boolean THEN h.amount - h.captured - h.released - (e.item->>5)::bigint ELSE 0 END AS rest
          FROM jsonb_array_elements(p_items) WITH ORDINALITY e(item, n) JOIN credit_holds h ON h.id = ANY (ids) AND h.id = ids[e.n]
      ), captured AS (
        INSERT INTO credit_captures (hold_id, capture_key, amount, tool_call_id, description)
        SELECT t.hold_id, t.capture_key, t.amount, t.tool_call_id, t.description FROM t ORDER BY t.n
        RETURNING id, hold_id
      ), resolved AS (
        UPDATE credit_holds h
           SET captured = h.captured + t.amount,
               released = h.released + t.rest,
               status = CASE WHEN t.final THEN 'captured' ELSE h.status END,
               resolution = CASE WHEN t.final THEN 'capture' ELSE h.resolution END,
               resolved_at = CASE WHEN t.final THEN now() ELSE h.resolved_at END
          FROM t WHERE h.id = t.hold_id
      )
      SELECT array_agg(c.id ORDER BY t.n), array_agg(t.rest ORDER BY t.n) INTO capture_ids, rests FROM t JOIN captured c ON c.hold_id = t.hold_id;

      -- ... then organization by organization, in organization order: the balance, the grants drawn in
      -- draw-down order for all its captures together, each capture's share of them and its release
      -- as the ledger rows credit_resolve_hold writes.
      FOR o IN
        SELECT h.organization_id, sum((e.item->>5)::bigint)::bigint AS spent, sum(rests[e.n])::bigint AS rest
          FROM jsonb_array_elements(p_items) WITH ORDINALITY e(item, n) JOIN credit_holds h ON h.id = ANY (ids) AND h.id = ids[e.n]
         GROUP BY 1 ORDER BY 1
      LOOP
        UPDATE credit_balances SET captured = captured + o.spent, held = held - o.spent - o.rest, updated_at = now()
         WHERE organization_id = o.organization_id AND lingering = 0;
        IF NOT FOUND THEN
          -- A grant of it expired since the check above: the caller captures these one by one.
          RAISE EXCEPTION 'credit_capture_batch: % has lingering credits now', o.organization_id;
        END IF;
        WITH pieces AS (
          SELECT d.grant_id, d.amount, sum(d.amount) OVER (ORDER BY d.running) AS finish
            FROM credit_draw(o.organization_id, o.spent, 0, false) d
        ), caps AS (
          SELECT e.n, h.id AS hold_id, h.organization_id, h.user_id, h.conversation_id, h.message_id, h.reason, h.tool_call_id AS hold_tool_call_id,
                 (e.item->>5)::bigint AS amount, sum((e.item->>5)::bigint) OVER (ORDER BY e.n) AS finish, rests[e.n] AS rest,
                 capture_ids[e.n] AS capture_id, e.item->>7 AS tool_call_id, e.item->>8 AS description, e.item->9 AS metadata
            FROM jsonb_array_elements(p_items) WITH ORDINALITY e(item, n) JOIN credit_holds h ON h.id = ANY (ids) AND h.id = ids[e.n]
           WHERE h.organization_id = o.organization_id
        ), entries AS (
          INSERT INTO credit_ledger_entries (organization_id, kind, amount, from_account, to_account, grant_id, hold_id, capture_id,
                                             user_id, conversation_id, message_id, tool_call_id, description, metadata)
          SELECT x.organization_id, x.kind, x.amount, x.from_account, x.to_account, x.grant_id, x.hold_id, x.capture_id,
                 x.user_id, x.conversation_id, x.message_id, x.tool_call_id, x.description, x.metadata
            FROM (
              SELECT c.n, 1 AS part, p.finish AS position, c.organization_id, 'capture' AS kind,
                     least(c.finish, p.finish) - greatest(c.finish - c.amount, p.finish - p.amount) AS amount,
                     'held' AS from_account, 'spent' AS to_account, p.grant_id, c.hold_id, c.capture_id, c.user_id, c.conversation_id, c.message_id,
                     coalesce(c.tool_call_id, c.hold_tool_call_id) AS tool_call_id, coalesce(c.description, 'Used for ' || c.reason) AS description,
                     coalesce(c.metadata, '{}'::jsonb) AS metadata
                FROM caps c JOIN pieces p ON p.finish - p.amount < c.finish AND c.finish - c.amount < p.finish
              UNION ALL
              SELECT c.n, 2, 0, c.organization_id, 'release', c.rest, 'held', 'available', NULL, c.hold_id, NULL, c.user_id, c.conversation_id,
                     c.message_id, c.hold_tool_call_id, 'Released: not used', '{}'::jsonb
                FROM caps c WHERE c.rest > 0
            ) x
           ORDER BY x.n, x.part, x.position
          RETURNING kind, amount
        )
        SELECT coalesce(sum(e.amount) FILTER (WHERE e.kind = 'capture'), 0) INTO drawn FROM entries e;
        -- The balance said these credits are held, so the grants have them: anything else is a broken ledger.
        IF drawn <> o.spent THEN
          RAISE EXCEPTION 'credit grants of % cover % of % captured credits', o.organization_id, drawn, o.spent;
        END IF;
      END LOOP;

      RETURN QUERY
      SELECT e.n::integer, 'captured'::text, to_jsonb(h), to_jsonb(c)
        FROM jsonb_array_elements(p_items) WITH ORDINALITY e(item, n)
        JOIN credit_holds h ON h.id = ANY (ids) AND h.id = ids[e.n]
        JOIN credit_captures c ON c.id = ANY (capture_ids) AND c.id = capture_ids[e.n];
    END $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION credit_capture_batch(jsonb);
    DROP FUNCTION credit_reserve_batch(jsonb);
    DROP FUNCTION credit_hold_of_run(text, text, text, text);
  `);
}
