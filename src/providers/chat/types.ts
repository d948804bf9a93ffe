export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** An assistant message's tool calls (the model asked for them instead of, or besides, text). */
  tool_calls?: ChatToolCall[] | undefined;
  /** A tool message: the call it answers. */
  tool_call_id?: string | undefined;
}

/** A call the model asks for: `arguments` is the JSON text the model wrote (it may be malformed). */
export interface ChatToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A tool offered to the model: `parameters` is the JSON Schema of its arguments. */
export interface ChatTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Sampling parameters passed through to the model (validated by the chat-models domain). */
export interface ChatParameters {
  temperature?: number | undefined;
  max_tokens?: number | undefined;
  top_p?: number | undefined;
}

/** Who serves a chat model (the catalog's `chat_models.provider`): the offline sandbox, or the OpenAI-compatible service. */
export type ChatService = 'sandbox' | 'openai-compatible';

export interface ChatRequest {
  /** The provider's model id (`gpt-4o-mini`, `sandbox-chat`). */
  model: string;
  /** Who serves `model`, as the catalog says (`chat_models.provider`): the process's chat provider routes the request by it (./routing.ts). */
  provider: ChatService;
  messages: ChatMessage[];
  parameters?: ChatParameters | undefined;
  /** Tools the model may call; none (or empty): the model can only answer. */
  tools?: ChatTool[] | undefined;
  /** Aborting it stops the stream and closes the upstream connection. */
  signal?: AbortSignal | undefined;
}

export interface ChatUsage {
  input_tokens: number;
  output_tokens: number;
}

/** A piece of the answer, in order; the tool calls (if any) once, complete, after the text; the usage once, last. */
export type ChatChunk = { delta: string } | { tool_calls: ChatToolCall[] } | { usage: ChatUsage };

/** A chat-completions model, streamed. `sandbox` answers offline and says so; `routing` hands each request to its model's service. */
export interface ChatProvider {
  readonly name: 'sandbox' | 'http' | 'routing';
  stream(request: ChatRequest): AsyncIterable<ChatChunk>;
}

/** The upstream refused or failed (after its retries); `status` is the last HTTP status, if any. */
export class ChatProviderError extends Error {
  readonly status: number | null;
  constructor(message: string, status: number | null = null) {
    super(message);
    this.status = status;
    this.name = 'ChatProviderError';
  }
}

/** The model's service is not configured in this process: asking again cannot succeed (no retry). */
export class ChatServiceNotConfigured extends ChatProviderError {
  constructor(service: ChatService) {
    super(`the ${service} chat service is not configured on this server`);
    this.name = 'ChatServiceNotConfigured';
  }
}

/**
 * By name, not `instanceof`: under tsx a handler loaded lazily (import()) and the provider built at
 * start-up (require) can hold two copies of this module, and so of the class.
 */
export const isChatServiceNotConfigured = (error: unknown): error is ChatServiceNotConfigured =>
  error instanceof Error && error.name === 'ChatServiceNotConfigured';
