import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type UpstreamHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export interface FakeUpstream {
  port: number;
  url: string;
  /** Paths requested so far, in order (to prove a refused fetch never connected). */
  requests: string[];
  close(): Promise<void>;
}

/** A real HTTP server on loopback standing in for a third party; routes by path. */
export async function startUpstream(routes: Record<string, UpstreamHandler>): Promise<FakeUpstream> {
  const requests: string[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    const handler = routes[(req.url ?? '').split('?')[0]!];
    if (handler) handler(req, res);
    else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('no such path');
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A fake upstream's view of a request body: parsed JSON (undefined when empty). */
export const readJson = (req: http.IncomingMessage) =>
  new Promise<any>((resolve) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => resolve(text ? JSON.parse(text) : undefined));
  });

/** A fake upstream's JSON answer. */
export const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
