import type { Knex } from 'knex';

/**
 * What the link-import and enrichment jobs learn gets columns of its own, so `metadata` (any JSON
 * value a user gives) round-trips exactly. Earlier workers merged their findings into `metadata`
 * (`enrichment`, `enrichment_error`, `import_error` keys, a non-object value wrapped under `value`):
 * those findings move to the new columns and the user's value is unwrapped again.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE assets
      ADD COLUMN import_error jsonb,
      ADD COLUMN enrichment jsonb,
      ADD COLUMN enrichment_error jsonb;

    WITH touched AS (
      SELECT id, metadata AS old, metadata - 'enrichment' - 'enrichment_error' - 'import_error' AS rest
        FROM assets
       WHERE jsonb_typeof(metadata) = 'object'
         AND (metadata -> 'enrichment' IS NOT NULL AND enrichment_state = 'success'
           OR metadata -> 'enrichment_error' IS NOT NULL AND enrichment_state = 'error'
           OR metadata -> 'import_error' IS NOT NULL AND upload_file_state = 'error')
    )
    UPDATE assets a SET
      enrichment = CASE WHEN a.enrichment_state = 'success' THEN t.old -> 'enrichment' END,
      enrichment_error = CASE WHEN a.enrichment_state = 'error' AND t.old -> 'enrichment_error' IS NOT NULL
                              THEN jsonb_build_object('code', 'enrichment_failed', 'message', t.old ->> 'enrichment_error') END,
      import_error = CASE WHEN a.upload_file_state = 'error' THEN t.old -> 'import_error' END,
      metadata = CASE
        WHEN t.rest = '{}'::jsonb THEN NULL
        -- The old merge wrapped a non-object value as {"value": …}.
        WHEN (SELECT count(*) FROM jsonb_object_keys(t.rest)) = 1 AND t.rest -> 'value' IS NOT NULL AND jsonb_typeof(t.rest -> 'value') <> 'object' THEN t.rest -> 'value'
        ELSE t.rest
      END
    FROM touched t
    WHERE a.id = t.id;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE assets DROP COLUMN import_error, DROP COLUMN enrichment, DROP COLUMN enrichment_error;');
}
