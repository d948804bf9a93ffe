import type { Knex } from 'knex';

/**
 * The chat-model catalog (seeded here; ids are strings such as `sandbox-chat`, not UUIDs) and each
 * organization's copy of a model: enabled or not, its display name, default parameters and credit
 * price overrides. Prices are whole credits per 1,000 tokens; an override lies between the catalog
 * price and ten times it (checked by the service with the field named, and here as a backstop).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE chat_models (
      id text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
      provider text NOT NULL CHECK (provider IN ('sandbox', 'openai-compatible')),
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 120),
      description text NOT NULL DEFAULT '',
      context_window integer NOT NULL CHECK (context_window > 0),
      input_credits_per_1k_tokens integer NOT NULL CHECK (input_credits_per_1k_tokens >= 0),
      output_credits_per_1k_tokens integer NOT NULL CHECK (output_credits_per_1k_tokens >= 0),
      enabled_by_default boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    INSERT INTO chat_models (id, provider, name, description, context_window, input_credits_per_1k_tokens, output_credits_per_1k_tokens, enabled_by_default) VALUES
      ('sandbox-chat', 'sandbox', 'Sandbox chat', 'Offline, deterministic answers streamed word by word; says it is a sandbox answer.', 8192, 1, 2, true),
      ('gpt-4o-mini', 'openai-compatible', 'GPT-4o mini', 'Fast, inexpensive general chat model through the OpenAI-compatible chat service.', 128000, 1, 4, true),
      ('gpt-4o', 'openai-compatible', 'GPT-4o', 'Larger general chat model through the OpenAI-compatible chat service.', 128000, 10, 40, false);

    CREATE TABLE organization_chat_models (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      chat_model_id text NOT NULL REFERENCES chat_models (id) ON DELETE CASCADE,
      enabled boolean NOT NULL,
      display_name text CHECK (length(display_name) BETWEEN 1 AND 120),
      default_parameters jsonb,
      input_credits_per_1k_tokens integer CHECK (input_credits_per_1k_tokens >= 0),
      output_credits_per_1k_tokens integer CHECK (output_credits_per_1k_tokens >= 0),
      updated_by_id text REFERENCES users (id),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, chat_model_id)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE organization_chat_models; DROP TABLE chat_models;');
}
