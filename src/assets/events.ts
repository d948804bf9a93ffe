// The asset events (src/core/events.ts): the asset as the API presents it, recorded in the
// transaction that moved its state. The upload path records `asset.upload.succeeded|failed` here too.
import type { Knex } from 'knex';
import { type EventType, recordEvent } from '../core/events.ts';
import { assetColumns, type AssetRow, presentAsset } from './presenter.ts';

export type AssetEventType = Extract<EventType, `asset.${string}`>;

/** Records `type` about the asset, read as it is now inside `trx` (nothing when it is gone). */
export async function recordAssetEvent(trx: Knex.Transaction, type: AssetEventType, assetId: string): Promise<void> {
  const row = (await trx('assets').where({ id: assetId }).first(assetColumns)) as AssetRow | undefined;
  if (row) await recordAssetRowEvent(trx, type, row);
}

/** Records `type` about the asset as `row` shows it: the row the change itself returned (`returning(assetColumns)`), with no read again. */
export async function recordAssetRowEvent(trx: Knex.Transaction, type: AssetEventType, row: AssetRow): Promise<void> {
  await recordEvent(trx, { organizationId: row.organization_id, type, subject: { type: 'asset', id: row.id }, object: presentAsset(row) });
}
