import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import type { Db } from '../../src/db/knex.ts';
import { fanOutEvent, type WebhookEvent } from '../../src/webhooks/index.ts';

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

/** How the receiver answers one request on a path: a status after a delay (default 200 at once). */
export type Behaviour = (request: Received) => { status?: number; delayMs?: number; body?: string; headers?: Record<string, string> } | undefined;

/** A real HTTP receiver on loopback recording every request (headers as sent, raw body); per-path behaviours. */
export async function startReceiver() {
  const received: Received[] = [];
  const behaviours = new Map<string, Behaviour>();
  const sockets = new Set<Socket>();
  let open = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[key] = value;
      const request = { path: req.url ?? '', headers, body, at: Date.now() };
      received.push(request);
      const answer = behaviours.get(request.path)?.(request) ?? {};
      open++;
      setTimeout(() => {
        open--;
        if (res.destroyed) return;
        res.writeHead(answer.status ?? 200, { 'content-type': 'text/plain', ...answer.headers });
        res.end(answer.body ?? 'ok');
      }, answer.delayMs ?? 0);
    });
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
    received,
    on: (path: string, behaviour: Behaviour) => behaviours.set(path, behaviour),
    at: (path: string) => received.filter((r) => r.path === path),
    /** Requests answered later than now (a slow endpoint still holding them). */
    open: () => open,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** What a receiver does with a request: verify it with the Standard Webhooks reference verifier, throwing when it does not verify. */
export const verify = (secret: string, request: Received) => new Webhook(secret).verify(request.body, request.headers);

/** The event log's side (another branch builds it): records nothing, just fans an event out in its own transaction, as recordEvent will. */
export async function publishEvents(db: Db, url: string, events: readonly WebhookEvent[]): Promise<void> {
  const boss = createBoss(url, 'web');
  await boss.start();
  try {
    const jobs = new JobQueue(boss);
    await db.transaction(async (trx) => {
      for (const event of events) await fanOutEvent(trx, event, { jobs });
    });
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}

let sequence = 0;
/** An event about `subject` (null: about the organization itself; by default one that owners and admins see, by `members.view`). */
export function anEvent(
  organizationId: string,
  type: WebhookEvent['type'] = 'member.added',
  subject: WebhookEvent['subject'] = null,
  object: unknown = { hello: 'world' },
): WebhookEvent {
  sequence++;
  return {
    id: `evt_${Date.now().toString(36)}_${sequence}`,
    type,
    organization_id: organizationId,
    created_at: new Date().toISOString(),
    data: { object },
    subject,
  };
}
