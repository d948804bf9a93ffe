import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Actor } from '../access/index.ts';
import { checkOutboundUrl } from '../connectors/index.ts';
import { recordActivity } from '../core/activity.ts';
import { notFound } from '../core/errors.ts';
import { paginate, type Page } from '../core/pagination.ts';
import { inTransaction } from '../db/transaction.ts';
import type { Deps } from '../platform/deps.ts';
import { webhookDeliveryJob } from './jobs.ts';
import { deliveryColumns, endpointColumns, type WebhookDeliveryRow, type WebhookEndpointRow } from './presenter.ts';
import type { CreateWebhookEndpoint, UpdateWebhookEndpoint } from './schema.ts';
import { keyringFor, newSigningSecret, SECRET_OVERLAP_HOURS, sealSigningSecret } from './signing.ts';

const checkUrl = (deps: Pick<Deps, 'config'>, url: string) => checkOutboundUrl(url, deps.config.OUTBOUND_ALLOWLIST, 'must not carry credentials');

const secretColumns = (sealed: ReturnType<typeof sealSigningSecret>, prefix = 'secret') => ({
  [`${prefix}_ciphertext`]: sealed.ciphertext,
  [`${prefix}_iv`]: sealed.iv,
  [`${prefix}_auth_tag`]: sealed.auth_tag,
  [`${prefix}_key_id`]: sealed.key_id,
});

const record = (trx: Knex.Transaction, actor: Actor, endpoint: WebhookEndpointRow, action: string, data: Record<string, unknown> = {}) =>
  recordActivity(trx, {
    organizationId: endpoint.organization_id,
    actorId: actor.userId,
    action,
    subjectType: 'webhook_endpoint',
    subjectId: endpoint.id,
    data,
  });

/** The route admitted a member holding `webhooks.manage`; the endpoint is theirs to create. Returns it with its secret, shown this once. */
export async function createEndpoint(deps: Pick<Deps, 'config' | 'db'>, actor: Actor, organizationId: string, body: CreateWebhookEndpoint) {
  const url = await checkUrl(deps, body.url);
  const keyring = await keyringFor(deps.config);
  const id = randomUUID();
  const secret = newSigningSecret();
  const endpoint = await inTransaction(deps.db, async (trx) => {
    const [row] = (await trx('webhook_endpoints')
      .insert({
        id,
        organization_id: organizationId,
        url,
        event_types: body.event_types,
        description: body.description ?? null,
        enabled: body.enabled ?? true,
        created_by_id: actor.userId,
        ...secretColumns(sealSigningSecret(keyring, id, secret)),
      })
      .returning(endpointColumns)) as WebhookEndpointRow[];
    await record(trx, actor, row!, 'webhook_endpoint.created', { event_types: row!.event_types });
    return row!;
  });
  return { endpoint, secret };
}

export async function listEndpoints(
  deps: Pick<Deps, 'db'>,
  organizationId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<Page<WebhookEndpointRow>> {
  return paginate<WebhookEndpointRow>(
    deps
      .db('webhook_endpoints as e')
      .where('e.organization_id', organizationId)
      .select(endpointColumns.map((c) => `e.${c}`)),
    [
      { column: 'e.created_at', direction: 'desc', type: 'timestamp' },
      { column: 'e.id', direction: 'desc' },
    ],
    page,
  );
}

/** An endpoint of the organization in the path; 404 for one of another organization, like a missing one. */
export async function getEndpoint(db: Knex, organizationId: string, endpointId: string, options: { forUpdate?: boolean } = {}): Promise<WebhookEndpointRow> {
  const query = db('webhook_endpoints').where({ id: endpointId, organization_id: organizationId }).first(endpointColumns);
  if (options.forUpdate) query.forUpdate();
  const row = (await query) as WebhookEndpointRow | undefined;
  if (!row) throw notFound('webhook endpoint');
  return row;
}

export async function updateEndpoint(
  deps: Pick<Deps, 'config' | 'db'>,
  actor: Actor,
  organizationId: string,
  endpointId: string,
  changes: UpdateWebhookEndpoint,
) {
  const url = changes.url === undefined ? undefined : await checkUrl(deps, changes.url);
  return inTransaction(deps.db, async (trx) => {
    const before = await getEndpoint(trx, organizationId, endpointId, { forUpdate: true });
    const update: Record<string, unknown> = { updated_at: trx.fn.now() };
    if (url !== undefined) update.url = url;
    if (changes.event_types !== undefined) update.event_types = changes.event_types;
    if (changes.description !== undefined) update.description = changes.description;
    if (changes.enabled !== undefined) {
      update.enabled = changes.enabled;
      // Enabled again by a person: its failure record starts afresh.
      if (changes.enabled && !before.enabled) Object.assign(update, { disabled_reason: null, failing_since: null });
    }
    const [row] = (await trx('webhook_endpoints').where({ id: endpointId }).update(update).returning(endpointColumns)) as WebhookEndpointRow[];
    await record(trx, actor, row!, 'webhook_endpoint.updated', { fields: Object.keys(changes) });
    return row!;
  });
}

/** Deletes the endpoint and its deliveries; their queued jobs find nothing to do. */
export async function deleteEndpoint(deps: Pick<Deps, 'db'>, actor: Actor, organizationId: string, endpointId: string): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    const endpoint = await getEndpoint(trx, organizationId, endpointId, { forUpdate: true });
    await trx('webhook_endpoints').where({ id: endpointId }).delete();
    await record(trx, actor, endpoint, 'webhook_endpoint.deleted');
  });
}

/** A new secret, shown this once; the previous one keeps signing beside it for SECRET_OVERLAP_HOURS. */
export async function rotateSecret(deps: Pick<Deps, 'config' | 'db'>, actor: Actor, organizationId: string, endpointId: string) {
  const keyring = await keyringFor(deps.config);
  const secret = newSigningSecret();
  const endpoint = await inTransaction(deps.db, async (trx) => {
    await getEndpoint(trx, organizationId, endpointId, { forUpdate: true });
    const [row] = (await trx('webhook_endpoints')
      .where({ id: endpointId })
      .update({
        previous_secret_ciphertext: trx.ref('secret_ciphertext'),
        previous_secret_iv: trx.ref('secret_iv'),
        previous_secret_auth_tag: trx.ref('secret_auth_tag'),
        previous_secret_key_id: trx.ref('secret_key_id'),
        previous_secret_expires_at: trx.raw('now() + make_interval(hours => ?)', [SECRET_OVERLAP_HOURS]),
        ...secretColumns(sealSigningSecret(keyring, endpointId, secret)),
        updated_at: trx.fn.now(),
      })
      .returning(endpointColumns)) as WebhookEndpointRow[];
    await record(trx, actor, row!, 'webhook_endpoint.secret_rotated');
    return row!;
  });
  return { endpoint, secret };
}

async function enqueueDelivery(
  deps: Pick<Deps, 'jobs'>,
  trx: Knex.Transaction,
  row: { organization_id: string; endpoint_id: string } & Record<string, unknown>,
): Promise<WebhookDeliveryRow> {
  const [delivery] = (await trx('webhook_deliveries').insert(row).returning(deliveryColumns)) as WebhookDeliveryRow[];
  const jobId = await deps.jobs.enqueue(
    trx,
    webhookDeliveryJob,
    { delivery_id: delivery!.id },
    { organizationId: row.organization_id, group: row.endpoint_id },
  );
  await trx('webhook_deliveries').where({ id: delivery!.id }).update({ job_id: jobId });
  return delivery!;
}

/** A `ping` event to this endpoint alone (also when disabled: check a receiver before enabling it). */
export async function sendPing(deps: Pick<Deps, 'db' | 'jobs'>, organizationId: string, endpointId: string): Promise<WebhookDeliveryRow> {
  return inTransaction(deps.db, async (trx) => {
    const endpoint = await getEndpoint(trx, organizationId, endpointId);
    const id = randomUUID();
    const payload = {
      id,
      type: 'ping',
      organization_id: organizationId,
      created_at: new Date().toISOString(),
      data: { object: { webhook_endpoint_id: endpoint.id, message: 'A test event: your endpoint is reachable and verifies our signature.' } },
    };
    return enqueueDelivery(deps, trx, { endpoint_id: endpoint.id, organization_id: organizationId, event_id: id, event_type: 'ping', payload });
  });
}

export async function listDeliveries(
  deps: Pick<Deps, 'db'>,
  organizationId: string,
  endpointId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<Page<WebhookDeliveryRow>> {
  await getEndpoint(deps.db, organizationId, endpointId);
  return paginate<WebhookDeliveryRow>(
    deps
      .db('webhook_deliveries as d')
      .where('d.endpoint_id', endpointId)
      .select(deliveryColumns.map((c) => `d.${c}`)),
    [
      { column: 'd.created_at', direction: 'desc', type: 'timestamp' },
      { column: 'd.id', direction: 'desc' },
    ],
    page,
  );
}

/**
 * Sends a delivery's event again as a new delivery (same `webhook-id`, so a receiver that already
 * has it can tell), decided afresh: access, endpoint state and secrets as they are now.
 */
export async function redeliver(deps: Pick<Deps, 'db' | 'jobs'>, organizationId: string, endpointId: string, deliveryId: string): Promise<WebhookDeliveryRow> {
  return inTransaction(deps.db, async (trx) => {
    await getEndpoint(trx, organizationId, endpointId);
    const original = await trx('webhook_deliveries').where({ id: deliveryId, endpoint_id: endpointId }).first();
    if (!original) throw notFound('webhook delivery');
    return enqueueDelivery(deps, trx, {
      endpoint_id: endpointId,
      organization_id: organizationId,
      event_id: original.event_id,
      event_type: original.event_type,
      payload: original.payload,
      subject_type: original.subject_type,
      subject_id: original.subject_id,
      redelivery_of: original.id,
    });
  });
}
