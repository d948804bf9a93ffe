// Image generation as a tool: a generation (its own job, billed through its metered call under the
// turn's run lock); the turn's job ends while it runs, and the generation's end sends the turn's next job.
import { createGeneration, type GenerationRow } from '../../generations/index.ts';
import { chatRunJob } from '../jobs.ts';
import { IMAGE_TOOL } from './names.ts';
import { ToolError, type TurnTool } from './types.ts';

const ENDED = ['succeeded', 'failed', 'canceled'];

export const imageTool: TurnTool = {
  name: IMAGE_TOOL,
  description:
    'Generates an image from a text prompt (a generation job; billed by the model’s price per image). Returns the generation id and the ids of the image assets it made.',
  parameters: {
    type: 'object',
    properties: {
      prompt: { type: 'string', minLength: 1, maxLength: 8000, description: 'What the image shows' },
      model: { type: 'string', description: 'An image generation model (GET /models/public); default the sandbox image model' },
      width: { type: 'integer', minimum: 16, maximum: 4096 },
      height: { type: 'integer', minimum: 16, maximum: 4096 },
    },
    required: ['prompt'],
    additionalProperties: false,
  },
  async run(args, { deps, actor, run, toolCallId, meteredCallId, budget }) {
    // The call's id is the tool call's, chosen before: a resumed (or retried) turn finds its generation.
    const made = (await deps.db('generations').where({ call_id: meteredCallId }).first()) as GenerationRow | undefined;
    if (made) {
      if (!ENDED.includes(made.status)) return { wait: true };
      if (made.status !== 'succeeded')
        throw new ToolError(
          `${IMAGE_TOOL}: the generation ${made.status === 'canceled' ? 'was canceled' : `failed: ${made.error?.message ?? 'unknown error'}`}; nothing was charged`,
        );
      return {
        content: JSON.stringify({ generation_id: made.id, status: made.status, asset_ids: made.asset_ids, credits_charged: made.credits_charged ?? 0 }),
        credits: made.credits_charged ?? 0,
      };
    }
    const prompt = typeof args.prompt === 'string' ? args.prompt.trim() : '';
    if (!prompt || prompt.length > 8000) throw new ToolError('arguments: prompt: must be 1–8000 characters of text');
    const size = (key: 'width' | 'height') => (typeof args[key] === 'number' ? { [key]: args[key] as number } : {});
    const left = budget.left();
    try {
      await createGeneration(
        deps,
        actor,
        {
          organization_id: run.organization_id,
          kind: 'image',
          ...(typeof args.model === 'string' && { model: args.model }),
          prompt,
          parameters: { ...size('width'), ...size('height') },
          conversation_id: run.conversation_id,
          ...(left !== null && { max_credits: Math.max(1, left) }),
        },
        undefined,
        {
          callId: meteredCallId,
          terms: { tool_call_id: toolCallId, message_id: run.message_id, run_lock: true },
          continueWith: { job: chatRunJob, payload: { run_id: run.id } },
        },
      );
    } catch (error) {
      throw new ToolError(`${IMAGE_TOOL}: ${error instanceof Error ? error.message : String(error)}`);
    }
    return { wait: true };
  },
};
