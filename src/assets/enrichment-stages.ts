// The recorded progress of an asset's enrichment: one row per finished stage, for the bytes it read
// (migration 20261127152000). A retried attempt reads them back and runs only what is missing.
import type { Db, Tx } from '../db/knex.ts';
import type { StageName, StageResult } from './enrichment.ts';

export interface RecordedStage {
  stage: StageName;
  facts: StageResult['facts'];
  completed_at: Date;
}

/** The stages already done for these bytes (`checksum`: their sha256); stages of other bytes are stale and left out. */
export async function recordedStages(db: Db | Tx, assetId: string, checksum: string): Promise<Map<StageName, RecordedStage>> {
  const rows = (await db('asset_enrichment_stages').where({ asset_id: assetId, checksum }).select('stage', 'result', 'completed_at')) as {
    stage: StageName;
    result: StageResult['facts'];
    completed_at: Date;
  }[];
  return new Map(rows.map((row) => [row.stage, { stage: row.stage, facts: row.result, completed_at: row.completed_at }]));
}

/**
 * Records a finished stage (replacing a stale row of other bytes) and, for a file's text, stores it
 * where search reads it — in one transaction (the attempt's lease-holding step), so a stage counts
 * as done exactly when its effects are written. An asset with inline `content` is its own text
 * (the search vector reads `content`), so it is not copied. The text is written only while the
 * asset is still being enriched: an attempt overtaken by a content change writes nothing there.
 */
export async function recordStage(trx: Tx, assetId: string, checksum: string, stage: StageName, result: StageResult, fromFile: boolean): Promise<void> {
  await trx('asset_enrichment_stages')
    .insert({ asset_id: assetId, stage, checksum, result: JSON.stringify(result.facts) })
    .onConflict(['asset_id', 'stage'])
    .merge({ checksum, result: JSON.stringify(result.facts), completed_at: trx.fn.now() });
  if (result.text !== undefined && fromFile) {
    await trx('assets').where({ id: assetId, enrichment_state: 'in_progress' }).update({ extracted_text: result.text });
  }
}
