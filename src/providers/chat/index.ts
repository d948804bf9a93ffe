import type { Config } from '../../config/schema.ts';
import { HttpChatProvider } from './http.ts';
import { SandboxChatProvider } from './sandbox.ts';
import type { ChatProvider } from './types.ts';

export type { ChatChunk, ChatMessage, ChatParameters, ChatProvider, ChatRequest, ChatTool, ChatToolCall, ChatUsage } from './types.ts';
export { ChatProviderError } from './types.ts';
export { sandboxAnswer, sandboxToolCalls } from './sandbox.ts';

export function createChatProvider(config: Config): ChatProvider {
  return config.CHAT_API_URL
    ? new HttpChatProvider({ baseUrl: config.CHAT_API_URL, apiKey: config.CHAT_API_KEY })
    : new SandboxChatProvider(config.CHAT_SANDBOX_DELAY_MS);
}
