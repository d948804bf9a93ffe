import type { Knex } from 'knex';

/**
 * The skill catalog (spec 2.6): listings copied from a custom skill, moderated by operators, and
 * added to organizations as community skills (the skills table already has `source`,
 * `listing_id` and `listing_version`; here they get their foreign key and index).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE skill_listings (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      slug text NOT NULL CHECK (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' AND length(slug) <= 64),
      status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'published', 'retired')),
      title text NOT NULL CHECK (length(title) <= 120),
      summary text NOT NULL CHECK (length(summary) <= 2000),
      categories text[] NOT NULL DEFAULT '{}'
        CHECK (categories <@ ARRAY['marketing', 'content', 'social', 'video', 'image', 'audio', 'research', 'design']::text[]),
      examples text[] NOT NULL DEFAULT '{}',
      author text NOT NULL,
      verified boolean NOT NULL DEFAULT false,
      license text,
      source_url text,
      -- The skill content, as of the listing's current version.
      name text NOT NULL CHECK (length(name) <= 120),
      description text NOT NULL CHECK (length(description) <= 2000),
      body text NOT NULL CHECK (length(body) <= 200000),
      files jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(files) = 'array'),
      version integer NOT NULL DEFAULT 1 CHECK (version >= 1),
      rank integer NOT NULL DEFAULT 0,
      uses integer NOT NULL DEFAULT 0 CHECK (uses >= 0),
      cover_key text,
      cover_content_type text,
      cover_updated_at timestamptz,
      -- The skill the listing was made from (provenance only: the listing keeps its own copy).
      skill_id uuid REFERENCES skills (id) ON DELETE SET NULL,
      published_at timestamptz,
      created_by_id text NOT NULL REFERENCES users (id),
      updated_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      -- A listing that was ever published keeps its first publication time.
      CHECK (status = 'draft' OR published_at IS NOT NULL),
      CHECK ((cover_key IS NULL) = (cover_content_type IS NULL))
    );
    CREATE UNIQUE INDEX skill_listings_slug_key ON skill_listings (slug);
    -- GET /skill-listings: the caller's own, newest first.
    CREATE INDEX skill_listings_author_idx ON skill_listings (created_by_id, created_at DESC, id DESC);
    -- GET /skill-catalog: published only, rank, then uses, then id.
    CREATE INDEX skill_listings_catalog_idx ON skill_listings (rank DESC, uses DESC, id) WHERE status = 'published';
    CREATE INDEX skill_listings_categories_idx ON skill_listings USING gin (categories) WHERE status = 'published';

    ALTER TABLE skills ADD CONSTRAINT skills_listing_id_fkey FOREIGN KEY (listing_id) REFERENCES skill_listings (id) ON DELETE SET NULL;
    CREATE INDEX skills_listing_idx ON skills (listing_id) WHERE listing_id IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX skills_listing_idx;
    ALTER TABLE skills DROP CONSTRAINT skills_listing_id_fkey;
    DROP TABLE skill_listings;
  `);
}
