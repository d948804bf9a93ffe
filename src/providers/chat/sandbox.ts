import { createHash } from 'node:crypto';
import type { ChatChunk, ChatProvider, ChatRequest } from './types.ts';

const phrases = [
  'the answer depends on the details you give',
  'a short list of next steps helps',
  'start with the simplest case first',
  'check the result against an example',
  'write down what you learn as you go',
  'ask again with more context for a longer answer',
];

/** Rough token count for usage: about four characters a token, at least one for any text. */
export const estimateTokens = (text: string): number => (text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4)));

/** The deterministic sandbox answer to a conversation (same messages and model → same text). */
export function sandboxAnswer(request: Pick<ChatRequest, 'model' | 'messages'>): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([request.model, request.messages]))
    .digest();
  const last = [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const topic = last.replace(/\s+/g, ' ').trim().slice(0, 60);
  const picked = [0, 1].map((i) => phrases[digest[i]! % phrases.length]!);
  return `[sandbox answer] You asked about "${topic}": ${picked[0]}, and ${picked[1]}. (reference ${digest.toString('hex').slice(0, 8)})`;
}

/** Offline stand-in: streams the deterministic answer word by word, then the estimated usage. */
export class SandboxChatProvider implements ChatProvider {
  readonly name = 'sandbox' as const;

  constructor(private readonly delayMs = 0) {}

  async *stream(request: ChatRequest): AsyncIterable<ChatChunk> {
    const answer = sandboxAnswer(request);
    const limit = request.parameters?.max_tokens;
    const tokens = answer.match(/\S+\s*/g) ?? [];
    const sent = limit === undefined ? tokens : tokens.slice(0, limit);
    for (const token of sent) {
      request.signal?.throwIfAborted();
      if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      yield { delta: token };
    }
    const input = request.messages.reduce((sum, m) => sum + estimateTokens(m.content), 0);
    yield { usage: { input_tokens: input, output_tokens: estimateTokens(sent.join('')) } };
  }
}
