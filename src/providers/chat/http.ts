import { type Dispatcher, request } from 'undici';
import { backoffMs, type HttpTuning, pause, retryableStatus, withDefaults } from '../http-retry.ts';
import { estimateTokens } from './sandbox.ts';
import { type ChatChunk, type ChatMessage, type ChatProvider, ChatProviderError, type ChatRequest, type ChatToolCall } from './types.ts';

export interface HttpChatOptions extends HttpTuning {
  /** CHAT_API_URL: the service's base URL, with or without a trailing `/v1`. */
  baseUrl: string;
  apiKey?: string | undefined;
}

/**
 * OpenAI-compatible `POST /v1/chat/completions` with `stream: true` and
 * `stream_options.include_usage`, read as server-sent events (`data:` lines, `[DONE]`).
 * Retries happen only before the first byte of an answer, so no delta is ever sent twice.
 * The URL is operator configuration, not user input, so the SSRF guard is not needed here.
 */
export class HttpChatProvider implements ChatProvider {
  readonly name = 'http' as const;
  private readonly url: URL;
  private readonly options: Required<Omit<HttpChatOptions, 'apiKey' | 'baseUrl'>> & Pick<HttpChatOptions, 'apiKey'>;

  constructor(options: HttpChatOptions) {
    const base = options.baseUrl.replace(/\/+$/, '');
    this.url = new URL(`${base.endsWith('/v1') ? base : `${base}/v1`}/chat/completions`);
    this.options = {
      apiKey: options.apiKey,
      ...withDefaults(options, { headersTimeoutMs: 30_000, bodyTimeoutMs: 60_000, maxRetries: 2, retryBaseMs: 500, retryMaxMs: 10_000 }),
    };
  }

  async *stream(chat: ChatRequest): AsyncIterable<ChatChunk> {
    const response = await this.open(chat);
    let text = '';
    let usage: { input_tokens: number; output_tokens: number } | null = null;
    // Streamed tool calls arrive in pieces keyed by `index`: the id and name first, the arguments' JSON text in fragments.
    const calls: ChatToolCall[] = [];
    try {
      for await (const data of serverSentData(response.body)) {
        if (data === '[DONE]') break;
        const event = parseEvent(data);
        if (event.error) throw new ChatProviderError(`chat service failed mid-stream: ${event.error.message ?? 'unknown error'}`, response.statusCode);
        const delta = event.choices?.[0]?.delta?.content;
        if (typeof delta === 'string' && delta.length > 0) {
          text += delta;
          yield { delta };
        }
        for (const piece of event.choices?.[0]?.delta?.tool_calls ?? []) {
          const index = piece.index ?? calls.length;
          const call = calls[index] ?? { id: '', name: '', arguments: '' };
          calls[index] = call;
          if (piece.id) call.id = piece.id;
          if (piece.function?.name) call.name += piece.function.name;
          if (piece.function?.arguments) call.arguments += piece.function.arguments;
        }
        if (event.usage) usage = { input_tokens: event.usage.prompt_tokens ?? 0, output_tokens: event.usage.completion_tokens ?? 0 };
      }
    } catch (error) {
      if (chat.signal?.aborted) throw chat.signal.reason;
      if (error instanceof ChatProviderError) throw error;
      throw new ChatProviderError(`chat service stream broke: ${(error as Error).message}`, response.statusCode);
    } finally {
      // Stopped early (abort, a consumer that stops iterating): closing the body closes the connection.
      if (!response.body.destroyed) response.body.destroy();
    }
    const asked = calls.filter((call) => call !== undefined && call.name !== '');
    if (asked.length > 0) yield { tool_calls: asked.map((call, i) => ({ ...call, id: call.id || `call_${i + 1}`, arguments: call.arguments || '{}' })) };
    // A service that does not report usage: estimate it, as the sandbox does.
    yield { usage: usage ?? { input_tokens: chat.messages.reduce((sum, m) => sum + estimateTokens(m.content), 0), output_tokens: estimateTokens(text) } };
  }

  /** The streaming response, once its headers say 2xx; retries 429/5xx and connection failures first. */
  private async open(chat: ChatRequest): Promise<Dispatcher.ResponseData> {
    const body = JSON.stringify({
      model: chat.model,
      messages: chat.messages.map(wireMessage),
      ...(chat.tools?.length && {
        tools: chat.tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } })),
      }),
      stream: true,
      stream_options: { include_usage: true },
      ...(chat.parameters?.temperature !== undefined && { temperature: chat.parameters.temperature }),
      ...(chat.parameters?.max_tokens !== undefined && { max_tokens: chat.parameters.max_tokens }),
      ...(chat.parameters?.top_p !== undefined && { top_p: chat.parameters.top_p }),
    });
    for (let attempt = 0; ; attempt++) {
      chat.signal?.throwIfAborted();
      let response: Dispatcher.ResponseData;
      try {
        response = await request(this.url, {
          method: 'POST',
          headers: {
            accept: 'text/event-stream',
            'content-type': 'application/json',
            ...(this.options.apiKey && { authorization: `Bearer ${this.options.apiKey}` }),
          },
          body,
          headersTimeout: this.options.headersTimeoutMs,
          bodyTimeout: this.options.bodyTimeoutMs,
          ...(chat.signal && { signal: chat.signal }),
        });
      } catch (error) {
        if (chat.signal?.aborted) throw chat.signal.reason;
        if (attempt < this.options.maxRetries) {
          await this.pause(attempt, null, chat.signal);
          continue;
        }
        throw new ChatProviderError(`chat service unreachable: ${(error as Error).message}`);
      }
      if (response.statusCode >= 200 && response.statusCode <= 299) return response;
      const detail = (await response.body.text().catch(() => '')).slice(0, 200);
      if (retryableStatus(response.statusCode) && attempt < this.options.maxRetries) {
        await this.pause(attempt, response.headers['retry-after'], chat.signal);
        continue;
      }
      const tries = attempt + 1;
      throw new ChatProviderError(
        `chat service answered ${response.statusCode}${tries > 1 ? ` after ${tries} attempts` : ''}${detail ? `: ${detail}` : ''}`,
        response.statusCode,
      );
    }
  }

  private pause(attempt: number, retryAfter: string | string[] | undefined | null, signal: AbortSignal | undefined): Promise<void> {
    return pause(backoffMs(attempt, retryAfter, this.options), signal);
  }
}

/** A message as the chat-completions API takes it: tool calls as `function` calls. */
function wireMessage(message: ChatMessage): Record<string, unknown> {
  if (message.role === 'tool') return { role: 'tool', tool_call_id: message.tool_call_id, content: message.content };
  if (message.role === 'assistant' && message.tool_calls?.length)
    return {
      role: 'assistant',
      content: message.content || null,
      tool_calls: message.tool_calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
    };
  return { role: message.role, content: message.content };
}

interface ToolCallPiece {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface CompletionEvent {
  choices?: { delta?: { content?: string | null; tool_calls?: ToolCallPiece[] } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string };
}

function parseEvent(data: string): CompletionEvent {
  try {
    return JSON.parse(data) as CompletionEvent;
  } catch {
    throw new ChatProviderError('chat service streamed an event that is not JSON');
  }
}

/** The `data` of each server-sent event (multi-line data joined by newlines; comments and other fields ignored). */
async function* serverSentData(body: AsyncIterable<Buffer>): AsyncIterable<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  const lines = function* (final: boolean) {
    let end = buffer.search(/\r\n|\r|\n/);
    while (end !== -1) {
      const line = buffer.slice(0, end);
      const skip = buffer.startsWith('\r\n', end) ? 2 : 1;
      // A lone \r at the very end may be half of \r\n: wait for the next chunk.
      if (!final && skip === 1 && buffer[end] === '\r' && end === buffer.length - 1) return;
      buffer = buffer.slice(end + skip);
      yield line;
      end = buffer.search(/\r\n|\r|\n/);
    }
  };
  const dispatch = function* (line: string) {
    if (line === '') {
      if (data.length > 0) yield data.join('\n');
      data = [];
    } else if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  };
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (const line of lines(false)) yield* dispatch(line);
  }
  buffer += decoder.decode();
  for (const line of lines(true)) yield* dispatch(line);
  if (buffer !== '') yield* dispatch(buffer);
  if (data.length > 0) yield data.join('\n');
}
