import { uuid, z } from '../../core/zod.ts';

/** A run's `context` (OpenAPI): what its prompt held once fitted to the model's window. */
export const runContextSchema = z
  .object({
    window: z.number().int().openapi({ description: 'The model’s context window in tokens.' }),
    tokens: z.number().int().openapi({ description: 'Prompt tokens sent, counted with the o200k_base encoding (gpt-tokenizer), message framing included.' }),
    answer_tokens: z
      .number()
      .int()
      .openapi({ description: 'Tokens reserved for the answer: `max_tokens` (else 1024), at most half the window; a larger `max_tokens` is lowered to it.' }),
    messages: z.number().int().openapi({ description: 'Messages of the branch sent (the newest ones).' }),
    dropped_messages: z
      .number()
      .int()
      .openapi({ description: 'Oldest messages of the branch left out to fit the window; a system note tells the model how many.' }),
    truncated_messages: z
      .number()
      .int()
      .openapi({ description: 'Messages sent cut short: tool results over their budget, or one message larger than the window (its middle cut).' }),
    system_truncated: z.boolean().openapi({ description: 'Whether the knowledge (system context) was cut to half the prompt budget.' }),
    tools_tokens: z.number().int().openapi({
      description: 'Tokens the definitions of the tools offered took from the window (at most a quarter of it; tools beyond that are left out of the turn).',
    }),
    knowledge: z
      .array(
        z
          .object({
            project_id: uuid
              .nullable()
              .openapi({ description: 'The project whose knowledge it is; null: the conversation’s own skill (`skill_id` of the conversation).' }),
            skill_id: uuid,
            status: z.enum(['injected', 'unreadable', 'deleted']).openapi({
              description:
                '`injected`: sent as system context; `unreadable`: the run’s user cannot read the skill (not sent); `deleted`: the skill is in the trash (not sent).',
            }),
          })
          .strict(),
      )
      .openapi({ description: 'The conversation’s own skill, then the knowledge skill of each live project it is filed in, and whether each was sent.' }),
  })
  .strict()
  .openapi('ChatRunContext', { description: 'What the turn sent its model, fitted to the model’s context window.' });
