import { iso } from '../core/present.ts';

export interface WebhookEndpointRow {
  id: string;
  organization_id: string;
  url: string;
  event_types: string[];
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: Date | null;
  previous_secret_expires_at: Date | null;
  created_by_id: string;
  created_at: Date;
  updated_at: Date;
}

/** What the API shows of an endpoint: never a secret, sealed or not. */
export const endpointColumns = [
  'id',
  'organization_id',
  'url',
  'event_types',
  'description',
  'enabled',
  'disabled_reason',
  'failing_since',
  'previous_secret_expires_at',
  'created_by_id',
  'created_at',
  'updated_at',
] as const;

export function presentEndpoint(row: WebhookEndpointRow, now = new Date()) {
  const rotating = row.previous_secret_expires_at && row.previous_secret_expires_at > now ? row.previous_secret_expires_at : null;
  return {
    id: row.id,
    organization_id: row.organization_id,
    url: row.url,
    event_types: row.event_types,
    description: row.description,
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    failing_since: row.failing_since && iso(row.failing_since),
    secret_rotation_ends_at: rotating && iso(rotating),
    created_by_id: row.created_by_id,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export interface WebhookDeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'failed' | 'skipped';
  status_reason: string | null;
  attempts: number;
  response_status: number | null;
  response_body: string | null;
  latency_ms: number | null;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
  redelivery_of: string | null;
  created_at: Date;
}

export const deliveryColumns = [
  'id',
  'endpoint_id',
  'event_id',
  'event_type',
  'status',
  'status_reason',
  'attempts',
  'response_status',
  'response_body',
  'latency_ms',
  'last_attempt_at',
  'delivered_at',
  'redelivery_of',
  'created_at',
] as const;

export function presentDelivery(row: WebhookDeliveryRow) {
  return {
    ...row,
    last_attempt_at: row.last_attempt_at && iso(row.last_attempt_at),
    delivered_at: row.delivered_at && iso(row.delivered_at),
    created_at: iso(row.created_at),
  };
}
