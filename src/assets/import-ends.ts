// How a link import's job ends, for its asset: `success` with the file it stored (enrichment
// enqueued), or `error` with the reason — in the transaction that ends the job.
import type { Knex } from 'knex';
import type { EndReason, JobEnds } from '../jobs/define.ts';
import { completeImport, failImport, type ImportedFile, pendingImport, reopenImport } from './import-state.ts';
import type { AssetJobPayload } from './jobs.ts';

async function fail(trx: Knex.Transaction, assetId: string, reason: EndReason): Promise<void> {
  const asset = await pendingImport(trx, assetId);
  if (asset) await failImport(trx, asset, { code: reason.code, message: reason.message });
}

export const importEnds: JobEnds<AssetJobPayload, ImportedFile> = {
  async succeeded(trx, { asset_id }, file, { deps }) {
    const asset = await pendingImport(trx, asset_id);
    if (asset) await completeImport({ ...deps, db: trx as unknown as typeof deps.db }, asset, file);
  },
  failed: (trx, { asset_id }, reason) => fail(trx, asset_id, reason),
  canceled: (trx, { asset_id }, reason) => fail(trx, asset_id, reason),
  /** A retried import starts over: the asset back `in_progress`, its error cleared. */
  reopen: (trx, { asset_id }) => reopenImport(trx, asset_id),
};
