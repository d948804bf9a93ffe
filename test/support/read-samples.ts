import { z } from '../../src/core/zod.ts';
import type { ReadOperation } from '../../src/metering/index.ts';

/** A plausible value for every subject field name the catalog uses; enums take their first option. */
const SAMPLES: Record<string, unknown> = {
  username: 'ada',
  handle: 'ada',
  post_id: 'p123',
  video_id: 'v123',
  url: 'https://example.com/p/123',
  query: 'coffee',
  highlight_id: 'h1',
  hashtag: 'coffee',
  music_id: 'm1',
  channel_id: 'UC123',
  page_id: 'pg1',
  group_id: 'g1',
  slug: 'acme',
  subreddit: 'coffee',
  mention: '@ada',
};

/**
 * The smallest valid input: required fields from SAMPLES, then (for "give one of" inputs, which
 * JSON Schema cannot mark required) the field the refinement names.
 */
export function sampleInput(operation: ReadOperation): Record<string, unknown> {
  const schema = z.toJSONSchema(operation.input, { io: 'input' }) as { required?: string[]; properties: Record<string, { enum?: unknown[] }> };
  const input: Record<string, unknown> = {};
  for (const key of schema.required ?? []) input[key] = SAMPLES[key] ?? schema.properties[key]?.enum?.[0];
  for (let tries = 0; tries < 3; tries++) {
    const parsed = operation.input.safeParse(input);
    if (parsed.success) return input;
    const key = String(parsed.error.issues[0]?.path[0]);
    if (!(key in SAMPLES) || key in input) break;
    input[key] = SAMPLES[key];
  }
  throw new Error(`${operation.name}: no sample input (add its subject field to SAMPLES)`);
}
