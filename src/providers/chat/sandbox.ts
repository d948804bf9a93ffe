import { createHash } from 'node:crypto';
import { pause } from '../http-retry.ts';
import type { ChatChunk, ChatProvider, ChatRequest, ChatToolCall } from './types.ts';

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

/** A line `/tool <name> <JSON arguments>` of the user's message asks the sandbox for that call. */
const TOOL_LINE = /^\/tool\s+(\S+)(?:\s+(.*))?$/;

/**
 * The sandbox's deterministic tool rule: when tools are offered and the newest message is the
 * user's, each of its lines `/tool <name> <JSON arguments>` (arguments default `{}`) becomes a tool
 * call, all in one round (so they run in parallel), with ids `call_<n>_<digest>`. Once tool results
 * follow, the sandbox answers in text, quoting each result's start (see `sandboxAnswer`).
 */
export function sandboxToolCalls(request: Pick<ChatRequest, 'messages' | 'tools'>): ChatToolCall[] {
  const last = request.messages.at(-1);
  if (!request.tools?.length || last?.role !== 'user') return [];
  const calls: ChatToolCall[] = [];
  for (const line of last.content.split(/\r?\n/)) {
    const match = TOOL_LINE.exec(line.trim());
    if (!match) continue;
    const args = match[2]?.trim() || '{}';
    const digest = createHash('sha256').update(`${calls.length}\u0000${match[1]}\u0000${args}`).digest('hex').slice(0, 12);
    calls.push({ id: `call_${calls.length + 1}_${digest}`, name: match[1]!, arguments: args });
  }
  return calls;
}

/** After tool results: a text answer quoting the start of each result of the latest round, in order. */
function answerFromToolResults(request: Pick<ChatRequest, 'messages'>): string | null {
  const results: string[] = [];
  for (let i = request.messages.length - 1; i >= 0 && request.messages[i]!.role === 'tool'; i--) {
    results.unshift(request.messages[i]!.content.replace(/\s+/g, ' ').trim().slice(0, 120));
  }
  if (results.length === 0) return null;
  return `[sandbox answer] The tools answered: ${results.map((r, i) => `(${i + 1}) ${r}`).join(' ')}`;
}

/** Offline stand-in: streams the deterministic answer word by word, then the estimated usage. */
export class SandboxChatProvider implements ChatProvider {
  readonly name = 'sandbox' as const;

  private readonly delayMs: number;
  constructor(delayMs = 0) {
    this.delayMs = delayMs;
  }

  async *stream(request: ChatRequest): AsyncIterable<ChatChunk> {
    const input = request.messages.reduce((sum, m) => sum + estimateTokens(m.content), 0);
    const calls = sandboxToolCalls(request);
    if (calls.length > 0) {
      request.signal?.throwIfAborted();
      if (this.delayMs > 0) await pause(this.delayMs, request.signal);
      yield { tool_calls: calls };
      yield { usage: { input_tokens: input, output_tokens: estimateTokens(JSON.stringify(calls)) } };
      return;
    }
    const answer = answerFromToolResults(request) ?? sandboxAnswer(request);
    const limit = request.parameters?.max_tokens;
    const tokens = answer.match(/\S+\s*/g) ?? [];
    const sent = limit === undefined ? tokens : tokens.slice(0, limit);
    for (const token of sent) {
      request.signal?.throwIfAborted();
      // The pause between words ends on the abort too: a stopped turn frees its worker slot at once.
      if (this.delayMs > 0) await pause(this.delayMs, request.signal);
      yield { delta: token };
    }
    yield { usage: { input_tokens: input, output_tokens: estimateTokens(sent.join('')) } };
  }
}
