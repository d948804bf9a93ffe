import type { Knex } from 'knex';

/**
 * SQL merging `patch` into an asset's metadata. Metadata that is not an object (a user may set any
 * JSON value) is wrapped under `value` rather than lost.
 */
export function mergeMetadata(db: Knex, patch: Record<string, unknown>): Knex.Raw {
  return db.raw(
    `(CASE WHEN metadata IS NULL THEN '{}'::jsonb WHEN jsonb_typeof(metadata) = 'object' THEN metadata ELSE jsonb_build_object('value', metadata) END) || ?::jsonb`,
    [JSON.stringify(patch)],
  );
}

/** True when this attempt is the job's last: transient failures then end the asset in `error` instead of retrying. */
export const isLastAttempt = (job: { retryCount: number }, retryLimit: number) => job.retryCount >= retryLimit;
