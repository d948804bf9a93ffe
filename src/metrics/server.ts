import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger } from '../platform/logger.ts';

/**
 * Whether an `Authorization` header carries `Bearer <token>`. Both sides are hashed first, so the
 * comparison is constant-time whatever the lengths (timingSafeEqual needs equal lengths, and an early
 * length check would tell the token's length).
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = /^Bearer +(\S+) *$/i.exec(header ?? '')?.[1] ?? '';
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(presented), digest(token)) && presented.length > 0;
}

export interface MetricsServerOptions {
  registry: Registry;
  /** 0 picks a free port (tests). */
  port: number;
  host: string;
  /** When set, a scrape must send `Authorization: Bearer <token>` (401 otherwise). */
  token?: string | undefined;
  log?: Logger;
}

export interface MetricsServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** The Error body of the API (CONVENTIONS §3), written here without the HTTP layer (workers never load src/http). */
function answerError(res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ code, message, data: { issues: [] } });
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/**
 * A bare node:http server answering `GET /metrics` in the Prometheus text format: the worker's (it has
 * no HTTP app) and the web process's when METRICS_PORT keeps scrapes off the API port. Anything else
 * is 404. No Koa: the worker must not load the HTTP layer, and a scrape needs none of it.
 */
export async function startMetricsServer({ registry, port, host, token, log }: MetricsServerOptions): Promise<MetricsServer> {
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      return answerError(res, 404, 'not_found', `no operation ${req.method} ${path}`);
    }
    if (token !== undefined && !bearerMatches(req.headers.authorization, token)) {
      return answerError(res, 401, 'unauthorized', 'a valid metrics token is required (Authorization: Bearer <METRICS_TOKEN>)', {
        'www-authenticate': 'Bearer realm="metrics"',
      });
    }
    try {
      const text = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : text);
    } catch (error) {
      log?.error({ err: error }, 'metrics scrape failed');
      answerError(res, 500, 'internal', 'internal error; the metrics could not be collected');
    }
  };
  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject).listen(port, host));
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  const shownHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${bound}`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
