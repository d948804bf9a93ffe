export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

/** Sampling parameters passed through to the model (validated by the chat-models domain). */
export interface ChatParameters {
  temperature?: number | undefined;
  max_tokens?: number | undefined;
  top_p?: number | undefined;
}

export interface ChatRequest {
  /** The provider's model id (`gpt-4o-mini`, `sandbox-chat`). */
  model: string;
  messages: ChatMessage[];
  parameters?: ChatParameters | undefined;
  /** Aborting it stops the stream and closes the upstream connection. */
  signal?: AbortSignal | undefined;
}

export interface ChatUsage {
  input_tokens: number;
  output_tokens: number;
}

/** A piece of the answer, in order; the usage comes once, last. */
export type ChatChunk = { delta: string } | { usage: ChatUsage };

/** A chat-completions model, streamed. `sandbox` answers offline and says so. */
export interface ChatProvider {
  readonly name: 'sandbox' | 'http';
  stream(request: ChatRequest): AsyncIterable<ChatChunk>;
}

/** The upstream refused or failed (after its retries); `status` is the last HTTP status, if any. */
export class ChatProviderError extends Error {
  constructor(
    message: string,
    readonly status: number | null = null,
  ) {
    super(message);
    this.name = 'ChatProviderError';
  }
}
