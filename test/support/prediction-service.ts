import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeGif } from '../../src/providers/generation/gif.ts';

/** A prediction as the fake service keeps it. */
export interface FakePrediction {
  id: string;
  prompt: string;
  idempotencyKey: string | undefined;
  webhook: string | undefined;
  createdAt: number;
  status: 'starting' | 'processing' | 'succeeded' | 'canceled';
  polls: number;
}

export interface FakePredictionService {
  url: string;
  port: number;
  /** Every prediction created, in order. */
  predictions: FakePrediction[];
  /** The most predictions that were running at once (created, not yet ended). */
  peakRunning(): number;
  /**
   * Ends a running prediction now and announces it to its webhook, signed (Standard Webhooks) with
   * `secret`; answers what the webhook's receiver answered.
   */
  finish(id: string, secret: string): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

const gif = encodeGif({ width: 2, height: 2, palette: new Uint8Array(768).fill(128), frames: [new Uint8Array(4).fill(1)], delayCs: 10 });

/**
 * A Replicate-like prediction service on loopback: `POST /v1/predictions` starts a prediction that
 * succeeds `seconds` after it was created (a GIF, `predict_time` 4 s); a prompt containing "stuck"
 * never ends, one containing "busy" is first refused with 429 and `Retry-After: 15`. The same
 * `Idempotency-Key` gets the same prediction back, as the real services do.
 */
export async function startPredictionService(options: { seconds: number }): Promise<FakePredictionService> {
  const predictions: FakePrediction[] = [];
  const busy = new Set<string>();
  let running = 0;
  let peak = 0;
  const end = (prediction: FakePrediction, status: 'succeeded' | 'canceled') => {
    if (prediction.status === 'succeeded' || prediction.status === 'canceled') return;
    prediction.status = status;
    running -= 1;
  };
  const answer = (res: http.ServerResponse, status: number, prediction: FakePrediction) => {
    if (prediction.status !== 'succeeded' && prediction.status !== 'canceled' && !prediction.prompt.includes('stuck')) {
      if (Date.now() - prediction.createdAt >= options.seconds * 1000) end(prediction, 'succeeded');
      else if (prediction.polls > 0) prediction.status = 'processing';
    }
    const done = prediction.status === 'succeeded';
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: prediction.id,
        status: prediction.status,
        ...(done && { output: [`data:image/gif;base64,${gif.toString('base64')}`], metrics: { predict_time: 4 } }),
      }),
    );
  };
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0]!;
      if (req.method === 'POST' && path === '/v1/predictions') {
        const body = JSON.parse(text) as { input: { prompt: string }; webhook?: string };
        const key = req.headers['idempotency-key'] as string | undefined;
        const again = key && predictions.find((p) => p.idempotencyKey === key);
        if (again) return answer(res, 201, again);
        // "busy" in the prompt: the service is at capacity the first time it is asked, and says when to come back.
        if (body.input.prompt.includes('busy') && !(key && busy.has(key))) {
          if (key) busy.add(key);
          res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '15' });
          return res.end('{"detail":"at capacity, come back later"}');
        }
        const prediction: FakePrediction = {
          id: randomUUID(),
          prompt: body.input.prompt,
          idempotencyKey: key,
          webhook: body.webhook,
          createdAt: Date.now(),
          status: 'starting',
          polls: 0,
        };
        predictions.push(prediction);
        running += 1;
        peak = Math.max(peak, running);
        return answer(res, 201, prediction);
      }
      const match = /^\/v1\/predictions\/([^/]+)(\/cancel)?$/.exec(path);
      const prediction = match && predictions.find((p) => p.id === decodeURIComponent(match[1]!));
      if (!prediction) {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end('{"detail":"no such prediction"}');
      }
      if (match[2]) end(prediction, 'canceled');
      else prediction.polls += 1;
      answer(res, 200, prediction);
    });
  });
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    predictions,
    peakRunning: () => peak,
    async finish(id, secret) {
      const prediction = predictions.find((p) => p.id === id)!;
      end(prediction, 'succeeded');
      return deliver(prediction.webhook!, secret, { id: prediction.id, status: 'succeeded' });
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** One Standard Webhooks delivery of `payload` to `url`, signed with `secret` (`whsec_<base64 key>`). */
export async function deliver(url: string, secret: string, payload: unknown): Promise<{ status: number; body: any }> {
  const id = `msg_${randomUUID()}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const body = JSON.stringify(payload);
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signature = `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature },
    body,
  });
  return { status: res.status, body: await res.json() };
}
