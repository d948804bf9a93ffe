import type { Knex } from 'knex';

/**
 * Enrichment in stages, and search over what it extracts.
 *
 * `asset_enrichment_stages`: one row per finished stage of an asset's enrichment (image probe,
 * thumbnails, text extraction, media probe), keyed by the checksum of the bytes it read. A retried
 * attempt (a worker killed mid-way) reuses every stage recorded for the same bytes and runs only the
 * rest; bytes that changed since make the old rows stale, so they are run again and overwritten.
 *
 * `assets.extracted_text`: the text enrichment read out of a stored file (PDF, DOCX, a text file).
 * An asset with inline `content` is its own text, so it is not copied.
 *
 * `assets.search_vector`: title (weight A) and text (weight B), English stemming, the same
 * configuration as the message recall. Only the first 200,000 characters of the text are indexed:
 * a tsvector holds at most 1 MB, and a longer text could make the row unwritable.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE asset_enrichment_stages (
      asset_id uuid NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
      stage text NOT NULL CHECK (stage IN ('image', 'thumbnails', 'pdf', 'docx', 'media', 'text')),
      -- sha256 of the bytes the stage read: a stage recorded for other bytes is not reused.
      checksum text NOT NULL,
      result jsonb NOT NULL,
      completed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (asset_id, stage)
    );

    ALTER TABLE assets
      ADD COLUMN extracted_text text,
      ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', coalesce(title, '')), 'A') ||
        setweight(to_tsvector('english', left(coalesce(extracted_text, content, ''), 200000)), 'B')
      ) STORED;

    CREATE INDEX assets_search_idx ON assets USING gin (search_vector);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX assets_search_idx;
    ALTER TABLE assets DROP COLUMN search_vector, DROP COLUMN extracted_text;
    DROP TABLE asset_enrichment_stages;
  `);
}
