import type { Knex } from 'knex';

/**
 * The generation-model catalog (seeded here, like the chat models): what each model produces, who
 * serves it and its price — credits per unit, in the unit that provider bills (an image, a second
 * of audio or video, a frame, 1,000 characters or tokens), and the most units one generation may
 * use (the quote's ceiling). Quotes, holds and GET /models/public read these same rows.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE generation_models (
      id text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
      kind text NOT NULL CHECK (kind IN ('image', 'audio', 'video', 'text')),
      provider text NOT NULL CHECK (provider IN ('sandbox', 'openai-compatible', 'prediction')),
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 120),
      description text NOT NULL DEFAULT '',
      unit text NOT NULL CHECK (unit IN ('image', 'second', 'frame', '1k_characters', '1k_tokens')),
      credits_per_unit integer NOT NULL CHECK (credits_per_unit >= 0),
      max_units integer NOT NULL CHECK (max_units > 0),
      enabled_by_default boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    INSERT INTO generation_models (id, kind, provider, name, description, unit, credits_per_unit, max_units) VALUES
      ('sandbox-image', 'image', 'sandbox', 'Sandbox image', 'Offline: a deterministic PNG pattern drawn from the prompt, marked as sandbox output.', 'image', 4, 1),
      ('sandbox-audio', 'audio', 'sandbox', 'Sandbox audio', 'Offline: a deterministic WAV tone sequence of 1–10 seconds, marked as sandbox output.', 'second', 1, 10),
      ('sandbox-video', 'video', 'sandbox', 'Sandbox video', 'Offline: a short looping animated GIF (2–24 frames) standing in for a video, marked as sandbox output.', 'frame', 1, 24),
      ('sandbox-text', 'text', 'sandbox', 'Sandbox text', 'Offline: deterministic text marked as a sandbox generation.', '1k_characters', 1, 16),
      ('gpt-image-1', 'image', 'openai-compatible', 'GPT Image 1', 'Images through the OpenAI-compatible images API.', 'image', 40, 1),
      ('tts-1', 'audio', 'openai-compatible', 'TTS 1', 'Speech from text through the OpenAI-compatible speech API, billed by the characters read.', '1k_characters', 15, 4),
      ('gpt-4o-mini-text', 'text', 'openai-compatible', 'GPT-4o mini (text)', 'Text through the OpenAI-compatible chat completions API.', '1k_tokens', 4, 8),
      ('video-prediction', 'video', 'prediction', 'Video (prediction API)', 'Short videos through the asynchronous prediction API, billed by the seconds it computes.', 'second', 50, 10);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE generation_models');
}
