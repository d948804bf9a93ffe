// Fitting a turn's prompt into its model's context window: pure, so the tool loop can refit every
// round, and counted with gpt-tokenizer (o200k_base, the encoding of the GPT-4o family).
import { countTokens, decode, encode } from 'gpt-tokenizer';

/** A message as the fitting sees it; other fields (a tool call's id, an assistant's tool_calls) are kept and counted. */
export interface PromptMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
}

/**
 * Framing tokens around each message (OpenAI's count for its chat models: `<|im_start|>`, the
 * role's separator, `<|im_end|>`), and the reply's priming at the end of the prompt.
 */
export const MESSAGE_OVERHEAD_TOKENS = 3;
export const REPLY_PRIMING_TOKENS = 3;

/**
 * Kept free of the window: the models behind an OpenAI-compatible service do not all tokenize as
 * o200k does, and a prompt that overflows is a provider error the turn cannot recover from.
 */
export const SAFETY_MARGIN = 0.05;

/** Answer length reserved when neither the run nor the organization's copy of the model names `max_tokens`. */
export const DEFAULT_ANSWER_TOKENS = 1024;

/** The most of the prompt budget the system context (knowledge) takes; past it, it is cut. */
export const SYSTEM_SHARE = 0.5;

/** A tool result keeps at most this many tokens, and at most a quarter of the prompt budget. */
export const TOOL_RESULT_MAX_TOKENS = 4000;

/** The note that stands where left-out messages were (a system message before the first kept one). */
export const droppedNote = (count: number) =>
  `${count} earlier message${count === 1 ? ' of this conversation was' : 's of this conversation were'} left out: they do not fit the model's context window.`;

/** The note's longest form, reserved before the fit knows how many messages it drops. */
const NOTE_ALLOWANCE = MESSAGE_OVERHEAD_TOKENS + 1 + countTokens(droppedNote(9_999_999));

/** Tokens a message takes in the prompt: its role, its content, its other fields as JSON, and the framing. */
/** What offering `tools` costs a request: their definitions as the model reads them (JSON), counted like messages. */
export const toolsTokens = (tools: readonly unknown[]): number => (tools.length === 0 ? 0 : countTokens(JSON.stringify(tools)));

export function messageTokens(message: PromptMessage): number {
  const { role, content, ...rest } = message;
  const extra = Object.keys(rest).length > 0 ? countTokens(JSON.stringify(rest)) : 0;
  return MESSAGE_OVERHEAD_TOKENS + countTokens(role) + countTokens(content ?? '') + extra;
}

/**
 * Counts of history messages already counted: a turn with tool rounds fits the same branch again
 * every round (../context/turn.ts `refit`), and counting a long branch is the fit's main cost.
 * Keyed by the message object, which no one changes once it is in a prompt.
 */
const counted = new WeakMap<PromptMessage, number>();

function historyTokens(message: PromptMessage): number {
  let tokens = counted.get(message);
  if (tokens === undefined) {
    tokens = messageTokens(message);
    counted.set(message, tokens);
  }
  return tokens;
}

/** Tokens a whole prompt takes: its messages and the reply's priming. */
export const promptTokens = (messages: readonly PromptMessage[]) => messages.reduce((sum, m) => sum + messageTokens(m), REPLY_PRIMING_TOKENS);

/** The window is too small for even the framing of the one message the turn answers. */
export class ContextWindowTooSmall extends Error {
  readonly window: number;
  readonly needed: number;
  constructor(window: number, needed: number) {
    super(`the model's context window (${window} tokens) cannot hold the message it is asked to answer (${needed} tokens at the least)`);
    this.window = window;
    this.needed = needed;
    this.name = 'ContextWindowTooSmall';
  }
}

/** What the fit did, as the run records it (`context` of a run). */
export interface ContextRecord {
  /** The model's context window. */
  window: number;
  /** Prompt tokens sent (counted as above). */
  tokens: number;
  /** Tokens reserved for the answer. */
  answer_tokens: number;
  /** History messages sent. */
  messages: number;
  /** Oldest history messages left out. */
  dropped_messages: number;
  /** Messages sent cut short (tool results over their budget, a single message over the window). */
  truncated_messages: number;
  /** Whether the system context (knowledge) was cut to its share. */
  system_truncated: boolean;
  /** Tokens the definitions of the tools offered took from the window. */
  tools_tokens: number;
}

export interface FitInput<M extends PromptMessage> {
  /** The system context (knowledge), or null for none. */
  system: string | null;
  /** The branch, oldest first; the last is the message answered. */
  history: readonly M[];
  /** The model's context window in tokens. */
  window: number;
  /** The answer's `max_tokens` when the run or the organization names one. */
  maxTokens?: number | undefined;
  /** Tokens the request spends besides its messages: the definitions of the tools offered (`toolsTokens`). */
  reservedTokens?: number | undefined;
}

export interface FitResult<M extends PromptMessage> {
  messages: (M | PromptMessage)[];
  /** The answer reserve: `maxTokens` (else DEFAULT_ANSWER_TOKENS), at most half the usable window. */
  answerTokens: number;
  /** Set when the asked `maxTokens` had to be lowered to leave the prompt room: send this as `max_tokens`. */
  cappedMaxTokens: number | undefined;
  record: ContextRecord;
}

/** What stands where a message's content was cut. */
const cutMarker = (kept: number, of: number) => `\n[… cut to fit the context window: ${kept} of ${of} tokens kept …]\n`;

/** The least a cut message's content takes: the marker alone. */
const CUT_MARKER_TOKENS = countTokens(cutMarker(9_999_999, 9_999_999));

/** `text` cut to about `tokens` tokens: its head (and with `keepTail` its tail too) around a marker saying how much was cut. */
export function cutToTokens(text: string, tokens: number, keepTail: boolean): string {
  const all = encode(text);
  if (all.length <= tokens) return text;
  const room = Math.max(0, tokens - countTokens(cutMarker(all.length, all.length)) - 2);
  const head = keepTail ? Math.ceil(room / 2) : room;
  const tail = keepTail ? room - head : 0;
  return decode(all.slice(0, head)) + cutMarker(room, all.length) + (tail > 0 ? decode(all.slice(all.length - tail)) : '');
}

/** A message with its content cut to fit `tokens` in total (framing and other fields included); the same message when it fits. */
function cutMessage<M extends PromptMessage>(message: M, tokens: number, keepTail: boolean): M {
  const fixed = messageTokens({ ...message, content: '' });
  let target = Math.max(0, tokens - fixed);
  for (;;) {
    const cut = { ...message, content: cutToTokens(message.content ?? '', target, keepTail) };
    // Re-encoding the joined pieces can merge tokens differently at the seams: shrink until it fits.
    const over = messageTokens(cut) - tokens;
    if (over <= 0 || target === 0) return cut;
    target = Math.max(0, target - over);
  }
}

/**
 * The prompt that fits: the system context first (cut to SYSTEM_SHARE of the budget), then the
 * newest history messages that fit, oldest left out (a note says how many); tool results cut to
 * their budget; a single message larger than what is left (only ever the newest) cut in its
 * middle. The budget is the window less SAFETY_MARGIN and the answer reserve. Throws
 * ContextWindowTooSmall when not even the answered message's framing fits.
 */
export function fitPrompt<M extends PromptMessage>(input: FitInput<M>): FitResult<M> {
  const usable = input.window - Math.ceil(input.window * SAFETY_MARGIN);
  const asked = input.maxTokens ?? DEFAULT_ANSWER_TOKENS;
  const answerTokens = Math.max(1, Math.min(asked, Math.floor(usable / 2)));
  const budget = usable - answerTokens - REPLY_PRIMING_TOKENS - (input.reservedTokens ?? 0);

  let system: PromptMessage | null = null;
  let systemTruncated = false;
  if (input.system !== null && input.system.length > 0) {
    system = { role: 'system', content: input.system };
    const share = Math.floor(budget * SYSTEM_SHARE);
    if (messageTokens(system) > share) {
      system = cutMessage(system, share, false);
      systemTruncated = true;
    }
  }
  const systemTokens = system ? messageTokens(system) : 0;

  // Tool results first cut to their budget; counted newest first, and only as far as the fit reads.
  const toolBudget = Math.min(TOOL_RESULT_MAX_TOKENS, Math.floor(budget / 4));
  const history = input.history;
  const entries: { message: M; tokens: number; cut: boolean }[] = [];
  const entry = (fromNewest: number) => {
    let prepared = entries[fromNewest];
    if (!prepared) {
      const message = history[history.length - 1 - fromNewest]!;
      const tokens = historyTokens(message);
      if (message.role === 'tool' && tokens > toolBudget) {
        const cut = cutMessage(message, toolBudget, false);
        prepared = { message: cut, tokens: messageTokens(cut), cut: true };
      } else prepared = { message, tokens, cut: false };
      entries[fromNewest] = prepared;
    }
    return prepared;
  };

  const room = budget - systemTokens;
  let kept = 0;
  let used = 0;
  // The whole history, if it fits; else the newest that fit beside the note saying how many were left out.
  while (kept < history.length && used + entry(kept).tokens <= room) used += entry(kept++).tokens;
  if (kept < history.length) {
    const space = room - NOTE_ALLOWANCE;
    kept = 0;
    used = 0;
    while (kept < history.length && used + entry(kept).tokens <= space) used += entry(kept++).tokens;
    if (kept === 0 && history.length > 0) {
      // The answered message alone is larger than the room: cut it (a tool result keeps its head, others head and tail).
      const newest = entry(0);
      const fixed = messageTokens({ ...newest.message, content: '' });
      if (space < fixed + CUT_MARKER_TOKENS)
        throw new ContextWindowTooSmall(input.window, fixed + CUT_MARKER_TOKENS + NOTE_ALLOWANCE + systemTokens + REPLY_PRIMING_TOKENS + answerTokens);
      const cut = cutMessage(newest.message, space, newest.message.role !== 'tool');
      entries[0] = { message: cut, tokens: messageTokens(cut), cut: true };
      kept = 1;
    }
    // A tool result whose call was left out cannot open the history (providers refuse it): it goes too.
    while (kept > 1 && entry(kept - 1).message.role === 'tool') kept--;
  }
  const keptEntries = entries.slice(0, kept).reverse();
  const dropped = history.length - kept;
  const truncated = keptEntries.filter((k) => k.cut).length;
  const messages: (M | PromptMessage)[] = [
    ...(system ? [system] : []),
    ...(dropped > 0 ? [{ role: 'system' as const, content: droppedNote(dropped) }] : []),
    ...keptEntries.map((k) => k.message),
  ];
  return {
    messages,
    answerTokens,
    cappedMaxTokens: input.maxTokens !== undefined && answerTokens < input.maxTokens ? answerTokens : undefined,
    record: {
      window: input.window,
      // Each message was counted once already: the sum is the prompt's count (promptTokens would say the same).
      tokens:
        REPLY_PRIMING_TOKENS +
        messages.reduce((sum, m, i) => sum + (i < messages.length - kept ? messageTokens(m) : 0), 0) +
        keptEntries.reduce((sum, k) => sum + k.tokens, 0),
      answer_tokens: answerTokens,
      messages: kept,
      dropped_messages: dropped,
      truncated_messages: truncated,
      system_truncated: systemTruncated,
      tools_tokens: input.reservedTokens ?? 0,
    },
  };
}
