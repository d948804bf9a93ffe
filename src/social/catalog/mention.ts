/** resolve_mention: turn what a person wrote ("@ada", a profile link) into accounts on the networks. */
import { z } from '../../core/zod.ts';
import { networks } from '../../metering/index.ts';
import { lookup } from './define.ts';
import { summary } from './shapes.ts';

export const resolveMention = lookup({
  name: 'resolve_mention',
  description:
    'Find which accounts a mention refers to: give a handle ("@ada"), a profile URL or a name, optionally with the network; answers candidate accounts, most likely first.',
  input: z.strictObject({
    mention: z.string().min(1).max(500).describe('What was written: "@ada", "ada", a profile URL or a display name.'),
    network: z.enum(networks).optional().describe('Only look on this network (net1–net7); omit to look on all.'),
  }),
  output: z.object({
    summary,
    candidates: z.array(
      z.object({
        network: z.enum(networks),
        username: z.string(),
        name: z.string().optional(),
        url: z.string(),
        followers_count: z.number().int().min(0).optional(),
        confidence: z.number().min(0).max(1).describe('How likely this account is the one meant (0–1).'),
      }),
    ),
  }),
});
