import type { Knex } from 'knex';
import { ENDPOINT_CONCURRENCY } from './jobs.ts';

// pg-boss's group limit counts a group's active jobs inside each fetch statement, without
// serializing fetches, so workers fetching at the same instant can each see room for one more. The
// slots make the limit exact: an attempt POSTs only while it holds one of its endpoint's
// ENDPOINT_CONCURRENCY slot rows. pg-boss's limit still keeps most surplus jobs from being fetched.

/**
 * How long a claim holds its slot at most: past it the slot is free again by itself (a worker that
 * died mid-POST). Twice any POST (10 s, answer included: ./deliver.ts), so no live attempt ever
 * shares its slot.
 */
export const SLOT_LEASE_SECONDS = 20;
/** A delivery that found every slot held is fetched again after this long (plus up to a second of jitter). */
export const SLOT_WAIT_SECONDS = 2;

/** A holder's name: the attempt (job id and retry count), so a late release cannot free a slot someone else claimed since. */
export const slotHolder = (job: { id: string; retryCount: number }) => `${job.id}:${job.retryCount}`;

const CLAIM = `UPDATE webhook_endpoint_slots s SET holder = ?, held_until = now() + make_interval(secs => ?)
   WHERE (s.endpoint_id, s.slot) = (
     SELECT endpoint_id, slot FROM webhook_endpoint_slots
      WHERE endpoint_id = ? AND slot < ? AND (holder IS NULL OR held_until < now())
      ORDER BY slot LIMIT 1
        FOR UPDATE SKIP LOCKED)
   RETURNING s.slot`;

/**
 * Claims a free slot of the endpoint for `holder` in the caller's (short) transaction; null when all
 * are held. A slot row another claim has locked right now is skipped, not waited for: two racing
 * claims never take the same slot, and neither blocks. The rows are created by the first claim that
 * finds fewer than ENDPOINT_CONCURRENCY (a new endpoint, or a raised limit).
 */
export async function claimSlot(trx: Knex.Transaction, endpointId: string, holder: string): Promise<number | null> {
  const claim = async () => {
    const { rows } = await trx.raw(CLAIM, [holder, SLOT_LEASE_SECONDS, endpointId, ENDPOINT_CONCURRENCY]);
    return (rows[0]?.slot as number | undefined) ?? null;
  };
  const slot = await claim();
  if (slot !== null) return slot;
  const { rowCount } = await trx.raw(`INSERT INTO webhook_endpoint_slots (endpoint_id, slot) SELECT ?, generate_series(0, ? - 1) ON CONFLICT DO NOTHING`, [
    endpointId,
    ENDPOINT_CONCURRENCY,
  ]);
  return rowCount > 0 ? claim() : null;
}

/** A delivery as an attempt reads it, with the endpoint columns the attempt needs. */
export interface DeliveryToSend {
  id: string;
  endpoint_id: string;
  organization_id: string;
  status: string;
  event_id: string;
  event_type: string;
  payload: unknown;
  subject_type: string | null;
  subject_id: string | null;
  url: string;
  enabled: boolean;
  created_by_id: string;
  secret_ciphertext: Buffer;
  secret_iv: Buffer;
  secret_auth_tag: Buffer;
  secret_key_id: string;
  previous_secret_ciphertext: Buffer | null;
  previous_secret_iv: Buffer | null;
  previous_secret_auth_tag: Buffer | null;
  previous_secret_key_id: string | null;
  previous_secret_expires_at: Date | null;
  /** The slot claimed for `holder`: null when the delivery is not to be sent, or no slot was free. */
  slot: number | null;
}

/**
 * An attempt's first read, in one round trip on the idle path: the delivery locked, its endpoint,
 * and — when the delivery is pending and its endpoint takes it (enabled, or a ping) — a free slot
 * claimed for `holder` as claimSlot does. A claim the attempt then does not use (the delivery is
 * skipped) is released in the same transaction. Undefined when the delivery is gone.
 */
export async function lockDeliveryClaimingSlot(trx: Knex.Transaction, deliveryId: string, holder: string): Promise<DeliveryToSend | undefined> {
  const { rows } = await trx.raw(
    `WITH d AS (
       SELECT id, endpoint_id, organization_id, status, event_id, event_type, payload, subject_type, subject_id
         FROM webhook_deliveries WHERE id = ? FOR UPDATE
     ), e AS (
       SELECT e.id, e.url, e.enabled, e.created_by_id, e.secret_ciphertext, e.secret_iv, e.secret_auth_tag, e.secret_key_id,
              e.previous_secret_ciphertext, e.previous_secret_iv, e.previous_secret_auth_tag, e.previous_secret_key_id, e.previous_secret_expires_at
         FROM webhook_endpoints e JOIN d ON e.id = d.endpoint_id
     ), free AS (
       SELECT s.endpoint_id, s.slot FROM webhook_endpoint_slots s JOIN d ON s.endpoint_id = d.endpoint_id JOIN e ON true
        WHERE d.status = 'pending' AND (e.enabled OR d.event_type = 'ping')
          AND s.slot < ? AND (s.holder IS NULL OR s.held_until < now())
        ORDER BY s.slot LIMIT 1
          FOR UPDATE OF s SKIP LOCKED
     ), claimed AS (
       UPDATE webhook_endpoint_slots s SET holder = ?, held_until = now() + make_interval(secs => ?)
         FROM free WHERE s.endpoint_id = free.endpoint_id AND s.slot = free.slot
       RETURNING s.slot
     )
     SELECT d.*, e.url, e.enabled, e.created_by_id, e.secret_ciphertext, e.secret_iv, e.secret_auth_tag, e.secret_key_id,
            e.previous_secret_ciphertext, e.previous_secret_iv, e.previous_secret_auth_tag, e.previous_secret_key_id, e.previous_secret_expires_at,
            (SELECT slot FROM claimed) AS slot
       FROM d JOIN e ON true`,
    [deliveryId, ENDPOINT_CONCURRENCY, holder, SLOT_LEASE_SECONDS],
  );
  return rows[0] as DeliveryToSend | undefined;
}

/** Frees the slot if `holder` still holds it (its lease may have lapsed and the slot gone to another). */
export async function releaseSlot(db: Knex, endpointId: string, slot: number, holder: string): Promise<void> {
  await db('webhook_endpoint_slots').where({ endpoint_id: endpointId, slot, holder }).update({ holder: null, held_until: null });
}
