import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { HttpChatProvider } from '../../src/providers/chat/http.ts';
import { retryAfterMs } from '../../src/providers/http-retry.ts';
import { type ChatChunk, ChatProviderError, type ChatRequest } from '../../src/providers/chat/index.ts';
import { startUpstream, type FakeUpstream, readJson, sleep } from '../support/upstream.ts';

const event = (delta: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: delta } }] })}\n\n`;
const usageEvent = (input: number, output: number) =>
  `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: input, completion_tokens: output } })}\n\n`;

async function collect(provider: HttpChatProvider, request: ChatRequest): Promise<ChatChunk[]> {
  const chunks: ChatChunk[] = [];
  for await (const chunk of provider.stream(request)) chunks.push(chunk);
  return chunks;
}

/** The OpenAI-compatible HTTP chat adapter against a fake chat service on loopback that streams SSE. */
describe('providers: HTTP chat (OpenAI-compatible, streaming)', () => {
  let upstream: FakeUpstream;
  const seen: { model: string; authorization: string | undefined; body: any; at: number }[] = [];
  const attempts = new Map<string, number>();
  let closed: { model: string; finished: boolean }[] = [];

  const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const scenarios: Record<string, (req: IncomingMessage, res: ServerResponse, attempt: number) => Promise<void> | void> = {
    ok: async (_req, res) => {
      sse(res);
      for (const delta of ['Hel', 'lo', ', ', 'world', '!']) {
        res.write(event(delta));
        await sleep(5);
      }
      res.write(usageEvent(12, 5));
      res.end('data: [DONE]\n\n');
    },
    // Events split across writes, CRLF line ends, a comment line and a keep-alive: the parser copes.
    ragged: async (_req, res) => {
      sse(res);
      const text = `: keep-alive\r\n\r\n${event('α').replaceAll('\n', '\r\n')}${event('β')}${usageEvent(3, 2)}data: [DONE]\n\n`;
      for (let i = 0; i < text.length; i += 7) {
        res.write(text.slice(i, i + 7));
        await sleep(1);
      }
      res.end();
    },
    'no-usage': (_req, res) => {
      sse(res);
      res.end(`${event('four')}${event(' words here now')}data: [DONE]\n\n`);
    },
    'rate-limited-once': (_req, res, attempt) => {
      if (attempt === 1) {
        res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' });
        res.end('{"error":{"message":"slow down"}}');
        return;
      }
      sse(res);
      res.end(`${event('after the wait')}${usageEvent(1, 3)}data: [DONE]\n\n`);
    },
    'retry-after-too-long': (_req, res, attempt) => {
      if (attempt === 1) {
        res.writeHead(503, { 'retry-after': '3600' });
        res.end();
        return;
      }
      sse(res);
      res.end(`${event('capped')}data: [DONE]\n\n`);
    },
    'always-500': (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"upstream exploded"}}');
    },
    'bad-request': (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"unknown model"}}');
    },
    endless: async (req, res) => {
      sse(res);
      let open = true;
      res.on('close', () => {
        open = false;
        closed.push({ model: 'endless', finished: res.writableFinished });
      });
      for (let i = 0; open && i < 400; i++) {
        res.write(event(`tick ${i} `));
        await sleep(25);
      }
      if (open) res.end('data: [DONE]\n\n');
      void req;
    },
  };

  before(async () => {
    upstream = await startUpstream({
      '/v1/chat/completions': async (req, res) => {
        const body = await readJson(req);
        const attempt = (attempts.get(body.model) ?? 0) + 1;
        attempts.set(body.model, attempt);
        seen.push({ model: body.model, authorization: req.headers.authorization, body, at: Date.now() });
        await scenarios[body.model]!(req, res, attempt);
      },
    });
  });
  after(() => upstream.close());

  const provider = (options: Partial<ConstructorParameters<typeof HttpChatProvider>[0]> = {}) =>
    new HttpChatProvider({ baseUrl: upstream.url, apiKey: 'chat-key-123', retryBaseMs: 10, ...options });
  const messages = [{ role: 'user' as const, content: 'Say hello' }];

  it('streams the deltas in order, then the reported usage; sends the OpenAI streaming request', async () => {
    const chunks = await collect(provider(), { model: 'ok', provider: 'openai-compatible', messages, parameters: { temperature: 0.2, max_tokens: 50 } });
    expect(chunks).to.deep.equal([
      { delta: 'Hel' },
      { delta: 'lo' },
      { delta: ', ' },
      { delta: 'world' },
      { delta: '!' },
      { usage: { input_tokens: 12, output_tokens: 5 } },
    ]);
    const request = seen.find((s) => s.model === 'ok')!;
    expect(request.authorization).to.equal('Bearer chat-key-123');
    expect(request.body).to.deep.equal({
      model: 'ok',
      messages,
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
      max_tokens: 50,
    });
  });

  it('accepts a base URL ending in /v1 and parses events split across packets with CRLF and comments', async () => {
    const chunks = await collect(provider({ baseUrl: `${upstream.url}/v1/` }), { model: 'ragged', provider: 'openai-compatible', messages });
    expect(chunks).to.deep.equal([{ delta: 'α' }, { delta: 'β' }, { usage: { input_tokens: 3, output_tokens: 2 } }]);
  });

  it('estimates the usage when the service does not report it', async () => {
    const chunks = await collect(provider(), { model: 'no-usage', provider: 'openai-compatible', messages });
    expect(chunks.at(-1)).to.deep.equal({ usage: { input_tokens: 3, output_tokens: 5 } });
  });

  it('retries a 429 after its Retry-After, then streams', async () => {
    const started = Date.now();
    const chunks = await collect(provider(), { model: 'rate-limited-once', provider: 'openai-compatible', messages });
    expect(chunks).to.deep.equal([{ delta: 'after the wait' }, { usage: { input_tokens: 1, output_tokens: 3 } }]);
    const tries = seen.filter((s) => s.model === 'rate-limited-once');
    expect(tries).to.have.length(2);
    expect(tries[1]!.at - tries[0]!.at).to.be.at.least(950);
    expect(Date.now() - started).to.be.below(5000);
  });

  it('caps a long Retry-After at the configured bound', async () => {
    const started = Date.now();
    const chunks = await collect(provider({ retryMaxMs: 50 }), { model: 'retry-after-too-long', provider: 'openai-compatible', messages });
    expect(chunks[0]).to.deep.equal({ delta: 'capped' });
    expect(Date.now() - started).to.be.below(1000);
  });

  it('a 500 that persists through the retries is a clear error naming the status', async () => {
    let failure: unknown;
    try {
      await collect(provider({ maxRetries: 2 }), { model: 'always-500', provider: 'openai-compatible', messages });
    } catch (error) {
      failure = error;
    }
    expect(failure).to.be.instanceOf(ChatProviderError);
    expect((failure as ChatProviderError).status).to.equal(500);
    expect((failure as Error).message)
      .to.include('answered 500 after 3 attempts')
      .and.include('upstream exploded');
    expect(seen.filter((s) => s.model === 'always-500')).to.have.length(3);
  });

  it('a 400 is not retried', async () => {
    let failure: unknown;
    try {
      await collect(provider(), { model: 'bad-request', provider: 'openai-compatible', messages });
    } catch (error) {
      failure = error;
    }
    expect(failure).to.be.instanceOf(ChatProviderError);
    expect((failure as ChatProviderError).status).to.equal(400);
    expect(seen.filter((s) => s.model === 'bad-request')).to.have.length(1);
  });

  it('an unreachable service is a clear error after the retries', async () => {
    let failure: unknown;
    try {
      await collect(new HttpChatProvider({ baseUrl: 'http://127.0.0.1:9', retryBaseMs: 5, maxRetries: 1 }), {
        model: 'ok',
        provider: 'openai-compatible',
        messages,
      });
    } catch (error) {
      failure = error;
    }
    expect(failure).to.be.instanceOf(ChatProviderError);
    expect((failure as Error).message).to.include('chat service unreachable');
  });

  it('aborting mid-stream stops the iteration and closes the upstream connection', async () => {
    closed = [];
    const controller = new AbortController();
    const deltas: string[] = [];
    let failure: unknown;
    try {
      for await (const chunk of provider().stream({ model: 'endless', provider: 'openai-compatible', messages, signal: controller.signal })) {
        if ('delta' in chunk) deltas.push(chunk.delta);
        if (deltas.length === 3) controller.abort(new Error('stopped by the user'));
      }
    } catch (error) {
      failure = error;
    }
    expect(deltas).to.deep.equal(['tick 0 ', 'tick 1 ', 'tick 2 ']);
    expect((failure as Error).message).to.equal('stopped by the user');
    const deadline = Date.now() + 2000;
    while (closed.length === 0 && Date.now() < deadline) await sleep(10);
    expect(closed).to.deep.equal([{ model: 'endless', finished: false }]);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('2')).to.equal(2000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).to.equal(6000);
    expect(retryAfterMs('soon')).to.equal(null);
    expect(retryAfterMs(undefined)).to.equal(null);
  });
});
