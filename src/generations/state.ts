// The generation row's end states, written inside the settle of its metered call (src/metering/settle.ts).
import type { Knex } from 'knex';
import { recordEvent } from '../core/events.ts';
import { type GenerationRow, presentGeneration } from './presenter.ts';

export async function endGeneration(
  trx: Knex.Transaction,
  id: string,
  end:
    | { status: 'succeeded'; assetIds: string[]; creditsCharged: number; sandbox: boolean; startedAt: string }
    | { status: 'failed' | 'canceled'; error: { code: string; message: string } },
): Promise<void> {
  const [ended] = (await trx('generations')
    .where({ id })
    .whereIn('status', ['queued', 'running'])
    .update({
      status: end.status,
      ...(end.status === 'succeeded'
        ? {
            asset_ids: end.assetIds,
            credits_charged: end.creditsCharged,
            sandbox: end.sandbox,
            progress: 1,
            error: null,
            // Work done within its first progress interval never wrote `running`: it started when its attempt began.
            started_at: trx.raw('coalesce(started_at, ?::timestamptz)', [end.startedAt]),
          }
        : { credits_charged: 0, error: JSON.stringify(end.error) }),
      finished_at: trx.fn.now(),
      updated_at: trx.fn.now(),
    })
    .returning('*')) as GenerationRow[];
  // Only the attempt that ended it tells: a repeated end changes nothing and records nothing.
  if (ended)
    await recordEvent(trx, {
      organizationId: ended.organization_id,
      type: `generation.${end.status}`,
      subject: { type: 'generation', id: ended.id },
      object: presentGeneration(ended),
    });
}
