import type { Knex } from 'knex';
import { timestamp, z } from '../core/zod.ts';

/** How many failing endpoints the console lists, longest failing first. */
const FAILING_SHOWN = 20;

export const webhookHealthSchema = z
  .object({
    backlog: z.object({
      pending: z.number().int().openapi({ description: 'Deliveries queued or waiting for a retry.' }),
      oldest_pending_seconds: z.number().nullable().openapi({ description: 'Age of the oldest of them (null: none).' }),
    }),
    failing_endpoints: z
      .array(
        z.object({
          endpoint_id: z.string(),
          organization_id: z.string(),
          // The host only: a URL's path or query may carry a receiver's token.
          host: z.string(),
          failing_since: timestamp,
          pending: z.number().int(),
        }),
      )
      .openapi({ description: `Enabled endpoints whose last attempts failed, longest failing first (at most ${FAILING_SHOWN}).` }),
    disabled_endpoints: z.number().int().openapi({ description: 'Endpoints the service disabled after failing for days.' }),
  })
  .openapi('WebhookHealth');
export type WebhookHealth = z.input<typeof webhookHealthSchema>;

/** Webhook delivery backlog and failing endpoints, service-wide or of one organization (the job console's scope). */
export async function webhookHealth(db: Knex, organizationId: string | null): Promise<WebhookHealth> {
  const scoped = (query: Knex.QueryBuilder, column: string) => (organizationId ? query.where(column, organizationId) : query);
  const backlog = await scoped(db('webhook_deliveries as d').where('d.status', 'pending'), 'd.organization_id').first(
    db.raw('count(*)::int AS pending'),
    db.raw('extract(epoch FROM now() - min(d.created_at))::float AS oldest_pending_seconds'),
  );
  const failing = await scoped(db('webhook_endpoints as e').where('e.enabled', true).whereNotNull('e.failing_since'), 'e.organization_id')
    .orderBy('e.failing_since')
    .limit(FAILING_SHOWN)
    .select(
      'e.id',
      'e.organization_id',
      'e.url',
      'e.failing_since',
      db.raw(`(SELECT count(*)::int FROM webhook_deliveries p WHERE p.endpoint_id = e.id AND p.status = 'pending') AS pending`),
    );
  const disabled = await scoped(db('webhook_endpoints as e').where('e.enabled', false).whereNotNull('e.disabled_reason'), 'e.organization_id').first(
    db.raw('count(*)::int AS count'),
  );
  return {
    backlog: { pending: backlog.pending, oldest_pending_seconds: backlog.oldest_pending_seconds },
    failing_endpoints: failing.map((row: { id: string; organization_id: string; url: string; failing_since: Date; pending: number }) => ({
      endpoint_id: row.id,
      organization_id: row.organization_id,
      host: new URL(row.url).host,
      failing_since: row.failing_since.toISOString(),
      pending: row.pending,
    })),
    disabled_endpoints: disabled.count,
  };
}
