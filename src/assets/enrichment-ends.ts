// How an enrichment's job ends, for its asset: `success` with what was measured, or `error` with
// the reason — in the transaction that ends the job.
import type { Knex } from 'knex';
import type { EndReason, JobEnds } from '../jobs/define.ts';
import { type Enrichment, REFUSAL_CODES } from './enrichment.ts';
import { finishEnrichment } from './import-state.ts';
import type { AssetJobPayload } from './jobs.ts';

const subjectOf = async (trx: Knex.Transaction, id: string) =>
  (await trx('assets').where({ id }).first('id', 'organization_id')) as { id: string; organization_id: string } | undefined;

async function fail(trx: Knex.Transaction, assetId: string, reason: EndReason): Promise<void> {
  const asset = await subjectOf(trx, assetId);
  // The handler's own refusals keep their code; any other failure (expired, lost, thrown) is `enrichment_failed`.
  const code = reason.code === 'canceled' || (REFUSAL_CODES as readonly string[]).includes(reason.code) ? reason.code : 'enrichment_failed';
  if (asset) await finishEnrichment(trx, asset, { state: 'error', error: { code, message: reason.message } });
}

export const enrichmentEnds: JobEnds<AssetJobPayload, Enrichment> = {
  async succeeded(trx, { asset_id }, enrichment) {
    const asset = await subjectOf(trx, asset_id);
    if (asset) await finishEnrichment(trx, asset, { state: 'success', enrichment });
  },
  failed: (trx, { asset_id }, reason) => fail(trx, asset_id, reason),
  canceled: (trx, { asset_id }, reason) => fail(trx, asset_id, reason),
  /** A retried enrichment measures again: the asset back to `pending`, its error cleared. */
  async reopen(trx, { asset_id }) {
    const reopened = await trx('assets')
      .where({ id: asset_id, enrichment_state: 'error' })
      .update({ enrichment_state: 'pending', enrichment_error: null, updated_at: trx.fn.now() })
      .returning('id');
    return reopened.length === 1;
  },
};
