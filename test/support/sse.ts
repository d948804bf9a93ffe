/** Server-Sent Events for tests and benchmarks: parse a stream, or follow an endpoint and collect its events. */

export interface SseEvent {
  event: string;
  data: any;
  /** The frame's `id:` (only when it has one). */
  id?: string;
}

/** The `event:` / `data:` frames of a text/event-stream body, as they arrive (comments and pings skipped). */
export async function* sseEvents(body: AsyncIterable<Uint8Array>): AsyncIterable<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      const id = /^id: (.*)$/m.exec(block)?.[1];
      if (event && data) yield { event, data: JSON.parse(data), ...(id !== undefined && { id }) };
    }
  }
}

/** Follows `path`: `events` fills as they arrive, `ended` resolves when the server closes the stream (or after `hangUp()`). */
export async function follow(base: string, path: string, token: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const res = await fetch(`${base}${path}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const events: SseEvent[] = [];
  const ended = (async () => {
    if (!res.ok) return;
    try {
      for await (const event of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) events.push(event);
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
  })();
  return { res, events, ended, hangUp: () => controller.abort() };
}
