import { type ChatChunk, type ChatProvider, type ChatRequest, type ChatService, ChatServiceNotConfigured } from './types.ts';

/**
 * One chat provider per process that serves every catalog model by its own service: a request
 * goes to the service its model names (`ChatRequest.provider`), so `sandbox-chat` stays the
 * sandbox while `gpt-4o-mini` goes to the configured HTTP service. A service that is not
 * configured refuses here too, for good (a web process configured differently from this worker);
 * otherwise runs never get this far, since a model of an unconfigured provider is refused when the
 * run is asked for (../configured.ts).
 */
export class RoutingChatProvider implements ChatProvider {
  readonly name = 'routing' as const;

  private readonly services: Readonly<Partial<Record<ChatService, ChatProvider>>>;
  constructor(services: Readonly<Partial<Record<ChatService, ChatProvider>>>) {
    this.services = services;
  }

  async *stream(request: ChatRequest): AsyncIterable<ChatChunk> {
    const service = this.services[request.provider];
    if (!service) throw new ChatServiceNotConfigured(request.provider);
    yield* service.stream(request);
  }
}
