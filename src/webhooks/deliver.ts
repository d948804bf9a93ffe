import type { Knex } from 'knex';
import { actorFor } from '../access/index.ts';
import { type EventType, eventTypes } from '../core/events.ts';
// The rule itself, not the events module (whose routes a worker must not load).
import { visibleEventSql } from '../events/visibility.ts';
import { failForGood, type JobContext, type NothingToDo, nothingToDo, type Snoozed, snooze } from '../jobs/define.ts';
import { parseAllowlist } from '../net/address-policy.ts';
import { OutboundFetchError } from '../net/errors.ts';
import { safePost } from '../net/safe-fetch.ts';
import type { Deps } from '../platform/deps.ts';
import { answeredOk, DISABLE_AFTER_HOURS, disableEndpoint, type Outcome, recordAttempt, type SentAttempt } from './attempts.ts';
import type { EndpointDisabledEmail } from './jobs.ts';
import { keyringFor, openSigningSecret, signedHeaders } from './signing.ts';
import { claimSlot, type DeliveryToSend, lockDeliveryClaimingSlot, releaseSlot, SLOT_LEASE_SECONDS, SLOT_WAIT_SECONDS, slotHolder } from './slots.ts';

/** Each attempt gives up after this long, answer body included. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** The part of an answer's body kept with the delivery. */
export const RESPONSE_BODY_KEPT = 4096;
// A slot's lease must outlive every POST, or a live attempt could share its slot.
if (SLOT_LEASE_SECONDS * 1000 < 2 * DELIVERY_TIMEOUT_MS) throw new Error('SLOT_LEASE_SECONDS must be at least twice DELIVERY_TIMEOUT_MS');

/** The step's answer when every slot of the endpoint is held. */
const FULL = Symbol('every slot held');

interface Prepared {
  deliveryId: string;
  endpointId: string;
  organizationId: string;
  url: string;
  messageId: string;
  eventType: string;
  body: string;
  secrets: string[];
  /** The endpoint's slot this attempt holds while it sends (./slots.ts). */
  slot: number;
}

/**
 * One attempt of a delivery. Decided under the delivery's lock, at this moment: the endpoint still
 * exists and is enabled (a ping goes to a disabled one too); its creator, for whom it acts, is still
 * a member holding webhooks.manage (else the endpoint is disabled and its owners and admins told)
 * and may see the event now by the rule GET …/events and the stream use (src/events/visibility.ts)
 * — else the delivery is `skipped`, with its reason, and nothing is sent. Then, holding one of the endpoint's slots (none free: the job goes back to wait,
 * no attempt used), the signed POST through the SSRF guard (no redirects, 10 s), and the attempt
 * recorded whatever it answered: a 2xx is returned for the job's `succeeded` end to record with the
 * job's completion (./ends.ts); anything else is recorded here and thrown for pg-boss to retry with
 * backoff.
 */
export async function deliverWebhook(
  { delivery_id }: { delivery_id: string },
  { deps, step, signal, job }: JobContext,
): Promise<SentAttempt | NothingToDo | Snoozed> {
  const holder = slotHolder(job);
  const prepared = await step(async (trx) => {
    const delivery = await lockDeliveryClaimingSlot(trx, delivery_id, holder);
    if (!delivery) return 'the delivery is gone (its endpoint was deleted)';
    const ready = await prepare(trx, deps, delivery);
    if (typeof ready === 'string') {
      if (delivery.slot !== null) await releaseSlot(trx, delivery.endpoint_id, delivery.slot, holder);
      return ready;
    }
    // None claimed with the read: every slot is held, or the endpoint's slot rows are still to be made.
    const slot = delivery.slot ?? (await claimSlot(trx, ready.endpointId, holder));
    if (slot !== null) return { ...ready, slot };
    return FULL;
  });
  // Every slot is held: the job waits and runs again, no retry used (the runtime's snooze).
  if (prepared === FULL) return snooze(SLOT_WAIT_SECONDS + Math.random(), 'every slot of the endpoint is held');
  if (typeof prepared === 'string') return nothingToDo(prepared);

  const started = new Date();
  let outcome: Outcome;
  try {
    outcome = await post(deps, prepared, started, signal);
  } catch (error) {
    // Interrupted (a cancel, a lost lease, a stopping worker): nothing to record, the slot is free at once.
    await releaseSlot(deps.db, prepared.endpointId, prepared.slot, holder);
    throw error;
  }
  const attempt: SentAttempt = {
    ...outcome,
    deliveryId: prepared.deliveryId,
    endpointId: prepared.endpointId,
    organizationId: prepared.organizationId,
    url: prepared.url,
    started,
    jobId: job.id,
    slot: prepared.slot,
    holder,
  };
  // A 2xx is recorded, and the slot freed, by the job's `succeeded` end (./ends.ts), in the transaction
  // that completes the job: one transaction fewer on the hot path. (Should that transaction find the
  // job no longer this attempt's, the slot frees itself SLOT_LEASE_SECONDS after its claim.)
  if (answeredOk(outcome)) return attempt;
  let settled: Awaited<ReturnType<typeof recordAttempt>>;
  try {
    settled = await step((trx) => recordAttempt(trx, deps, attempt));
  } catch (error) {
    await releaseSlot(deps.db, prepared.endpointId, prepared.slot, holder);
    throw error;
  }
  if (settled === 'settled') return nothingToDo('the delivery is gone (its endpoint was deleted)');
  const why = outcome.error ? `${outcome.error.code}: ${outcome.error.message}` : `the endpoint answered ${outcome.status}`;
  if (settled === 'disabled') throw failForGood('endpoint_disabled', `${why}; the endpoint failed for ${DISABLE_AFTER_HOURS} hours and was disabled`);
  // A ping answers the person testing the endpoint now: it is not retried for days.
  if (prepared.eventType === 'ping') throw failForGood('ping_failed', why);
  throw new Error(why);
}

async function prepare(trx: Knex.Transaction, deps: Pick<Deps, 'config' | 'jobs'>, delivery: DeliveryToSend): Promise<Omit<Prepared, 'slot'> | string> {
  const deliveryId = delivery.id;
  if (delivery.status !== 'pending') return `the delivery is already ${delivery.status}`;
  const skip = async (reason: string) => {
    await trx('webhook_deliveries').where({ id: deliveryId }).update({ status: 'skipped', status_reason: reason });
    return `skipped: ${reason}`;
  };
  const endpoint = { ...delivery, id: delivery.endpoint_id };
  if (!endpoint.enabled && delivery.event_type !== 'ping') {
    await trx('webhook_deliveries').where({ id: deliveryId }).update({ status: 'failed', status_reason: 'the endpoint is disabled' });
    return 'the endpoint is disabled';
  }
  // A ping answers the member testing the endpoint now (checked by its route); every event acts for the creator.
  if (delivery.event_type !== 'ping') {
    const creator = actorFor(trx, { userId: endpoint.created_by_id });
    const membership = await creator.membership(endpoint.organization_id);
    const viewer = membership && (await creator.viewer(endpoint.organization_id));
    if (!membership || !viewer || !membership.permissions.has('webhooks.manage')) {
      const reason = `the member who created the endpoint ${membership ? 'no longer holds webhooks.manage' : 'is no longer in the organization'}`;
      await disableEndpoint(
        trx,
        deps,
        { deliveryId, endpointId: endpoint.id, organizationId: endpoint.organization_id, url: endpoint.url },
        {
          reason,
          remedy: `Deliveries act for the member who created the endpoint, and nothing is sent for one who may no longer manage webhooks: create the endpoint again as a member holding webhooks.manage (POST /organizations/${endpoint.organization_id}/webhook-endpoints), then delete this one.`,
        },
      );
      return skip(reason);
    }
    // The one rule of the event list and the stream (src/events/visibility.ts), over the delivery's event as it is now.
    const visible = visibleEventSql(viewer, membership);
    const { rows } = await trx.raw(
      `SELECT ${visible.sql} AS visible FROM (SELECT d.event_type AS type, d.subject_type, d.subject_id FROM webhook_deliveries d WHERE d.id = ?) e`,
      [...visible.bindings, deliveryId] as Knex.RawBinding[],
    );
    if (!rows[0]?.visible) return skip(hiddenBecause(delivery));
  }
  const keyring = await keyringFor(deps.config);
  const secrets = [
    openSigningSecret(keyring, endpoint.id, {
      ciphertext: endpoint.secret_ciphertext,
      iv: endpoint.secret_iv,
      auth_tag: endpoint.secret_auth_tag,
      key_id: endpoint.secret_key_id,
    }),
  ];
  // A rotated-out secret's columns are set together (rotate-secret), and cleared together.
  if (endpoint.previous_secret_ciphertext && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > new Date()) {
    secrets.push(
      openSigningSecret(keyring, endpoint.id, {
        ciphertext: endpoint.previous_secret_ciphertext,
        iv: endpoint.previous_secret_iv!,
        auth_tag: endpoint.previous_secret_auth_tag!,
        key_id: endpoint.previous_secret_key_id!,
      }),
    );
  }
  return {
    deliveryId,
    endpointId: endpoint.id,
    organizationId: endpoint.organization_id,
    url: endpoint.url,
    messageId: delivery.event_id,
    eventType: delivery.event_type,
    body: JSON.stringify(delivery.payload),
    secrets,
  };
}

/** Why the creator may not see the delivery's event, in words. */
function hiddenBecause(delivery: DeliveryToSend): string {
  if (delivery.subject_type) return 'the member who created the endpoint cannot read the resource the event is about';
  const need: string | undefined = eventTypes[delivery.event_type as EventType];
  return need && need !== 'resource'
    ? `the member who created the endpoint does not hold ${need}, which this event needs`
    : 'the event names no resource the member who created the endpoint can read';
}

async function post(deps: Pick<Deps, 'config'>, prepared: Prepared, at: Date, signal: AbortSignal): Promise<Outcome> {
  const started = performance.now();
  const latencyMs = () => Math.round(performance.now() - started);
  try {
    const answer = await safePost(prepared.url, prepared.body, {
      allowlist: parseAllowlist(deps.config.OUTBOUND_ALLOWLIST),
      timeoutMs: DELIVERY_TIMEOUT_MS,
      keepBytes: RESPONSE_BODY_KEPT,
      signal,
      userAgent: 'WorkspacePlatform-Webhooks/1',
      // An endpoint takes a stream of deliveries: its connections are kept (to the addresses vetted at this attempt).
      keepAlive: true,
      headers: { 'content-type': 'application/json', ...signedHeaders(prepared.secrets, prepared.messageId, at, prepared.body) },
    });
    // Postgres text holds no NUL; the rest of the body is kept as the receiver wrote it.
    return { status: answer.status, body: answer.body.toString('utf8').replaceAll('\u0000', '\uFFFD'), latencyMs: latencyMs(), error: null };
  } catch (error) {
    // A cancel, a lost lease or a stopping worker: the runtime decides; nothing was judged.
    if (!(error instanceof OutboundFetchError)) throw error;
    return { status: null, body: null, latencyMs: latencyMs(), error: { code: error.code, message: error.message } };
  }
}

/** The provider dedupes on the key, so a retried attempt sends nothing twice. */
export async function sendEndpointDisabledEmail(payload: EndpointDisabledEmail, { deps }: JobContext): Promise<void> {
  await deps.providers.email.send({ to: payload.to, subject: payload.subject, text: payload.text, idempotencyKey: payload.idempotency_key });
}
