import type { Config } from '../../config/schema.ts';
import { HttpChatProvider } from './http.ts';
import { RoutingChatProvider } from './routing.ts';
import { SandboxChatProvider } from './sandbox.ts';
import type { ChatProvider } from './types.ts';

export type { ChatChunk, ChatMessage, ChatParameters, ChatProvider, ChatRequest, ChatService, ChatTool, ChatToolCall, ChatUsage } from './types.ts';
export { ChatProviderError, ChatServiceNotConfigured, isChatServiceNotConfigured } from './types.ts';
export { sandboxAnswer, sandboxToolCalls } from './sandbox.ts';

/**
 * Every chat service this process can reach, routed by the model: the sandbox always; the
 * OpenAI-compatible service when CHAT_API_URL is set (the same rule ../configured.ts lists and
 * accepts models by).
 */
export function createChatProvider(config: Config): ChatProvider {
  return new RoutingChatProvider({
    sandbox: new SandboxChatProvider(config.CHAT_SANDBOX_DELAY_MS),
    ...(config.CHAT_API_URL && { 'openai-compatible': new HttpChatProvider({ baseUrl: config.CHAT_API_URL, apiKey: config.CHAT_API_KEY }) }),
  });
}
