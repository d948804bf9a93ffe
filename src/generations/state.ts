// The generation row's end states, written inside the settle of its metered call (src/metering/settle.ts).
import type { Knex } from 'knex';

export async function endGeneration(
  trx: Knex.Transaction,
  id: string,
  end:
    | { status: 'succeeded'; assetIds: string[]; creditsCharged: number; sandbox: boolean }
    | { status: 'failed' | 'canceled'; error: { code: string; message: string } },
): Promise<void> {
  await trx('generations')
    .where({ id })
    .whereIn('status', ['queued', 'running'])
    .update({
      status: end.status,
      ...(end.status === 'succeeded'
        ? { asset_ids: end.assetIds, credits_charged: end.creditsCharged, sandbox: end.sandbox, progress: 1, error: null }
        : { credits_charged: 0, error: JSON.stringify(end.error) }),
      finished_at: trx.fn.now(),
      updated_at: trx.fn.now(),
    });
}
