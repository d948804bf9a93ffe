/**
 * Live run events (Server-Sent Events), fed by Postgres NOTIFY so that any web process can follow a
 * run any worker is streaming. The worker notifies (./run-notify.ts) when it writes a snapshot and
 * when the run ends (never the content); each web process waits on its one LISTEN connection
 * (src/db/notifications.ts). On a notification a stream re-reads the run's snapshot and sends what
 * was appended since its last event.
 *
 * Exactly once, resumable. A stream remembers only where it is in the text: the run's
 * `stream_epoch` (bumped whenever the snapshot is replaced rather than extended) and the length
 * sent. Each text frame's id is `<epoch>.<length>`; Last-Event-ID resumes from it — a `delta` of
 * the rest while the epoch is the same, else the whole `snapshot` again.
 *
 * Load. A worker's tick wakes many streams of a process at once: their runs are read in one
 * statement (`readRun`), and a wake that only says text advanced (`text: true`,
 * ./stream-batch.ts) skips the tool calls' read.
 */
import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import type { Actor } from '../access/index.ts';
import { notificationHub, waitingSubscribers } from '../db/notifications.ts';
import type { Db } from '../db/knex.ts';
import type { Deps } from '../platform/deps.ts';
import { RUN_EVENTS_CHANNEL } from './run-notify.ts';
import { getRun, type RunRow } from './runs.ts';
import { toolCallEvents } from './tools/events.ts';

const PING_MS = 15_000;

type Waiting = { resolve: (run: RunRow | undefined) => void; reject: (error: unknown) => void };
const runReads = new WeakMap<Db, Map<string, Waiting[]>>();

/** The run row, read together with every other run this process's streams ask for in the same turn of the event loop. */
function readRun(db: Db, runId: string): Promise<RunRow | undefined> {
  let batch = runReads.get(db);
  if (!batch) {
    const reads = new Map<string, Waiting[]>();
    runReads.set(db, reads);
    batch = reads;
    setImmediate(() => {
      runReads.delete(db);
      db('chat_runs')
        .whereIn('id', [...reads.keys()])
        .then(
          (rows: RunRow[]) => {
            const byId = new Map(rows.map((row) => [row.id, row]));
            for (const [id, waiting] of reads) for (const w of waiting) w.resolve(byId.get(id));
          },
          (error: unknown) => {
            for (const waiting of reads.values()) for (const w of waiting) w.reject(error);
          },
        );
    });
  }
  const waiting = batch.get(runId) ?? [];
  batch.set(runId, waiting);
  return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
}

/** How many run-event streams this process serves now. */
export const openRunEventStreams = (db: Db): number => waitingSubscribers(db, RUN_EVENTS_CHANNEL);

/** A run is over for its followers once the worker has settled it (or it was marked failed). */
const isOver = (run: RunRow) => run.credits_charged !== null || run.status === 'failed';

const frame = (event: string, data: unknown, id?: string) => `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

interface Position {
  epoch: number;
  length: number;
}

/** A text frame's id (`<epoch>.<length>`) back to its position; anything else is no position (the stream starts with a snapshot). */
const positionOf = (id: string | undefined): Position | null => {
  const match = /^(\d{1,9})\.(\d{1,15})$/.exec(id ?? '');
  return match ? { epoch: Number(match[1]), length: Number(match[2]) } : null;
};
const doneOf = (run: RunRow) => ({ run_id: run.id, status: run.status, answer_message_id: run.answer_message_id });

/**
 * GET /conversations/{id}/run/events: `snapshot` (the current text), then `delta` events (the text
 * appended since the last event; a snapshot that was replaced rather than extended is sent again as
 * `snapshot`), `tool_call` and `tool_result` as the model calls tools (./tools/events.ts), then `done` {status, answer_message_id}, and the stream ends. No live run: one `done`.
 */
export async function streamRunEvents(deps: Pick<Deps, 'db' | 'log'>, actor: Actor, conversationId: string, ctx: Context, lastEventId?: string): Promise<void> {
  const first = await getRun(deps, actor, conversationId);
  const stream = new PassThrough();
  ctx.type = 'text/event-stream';
  ctx.set('Cache-Control', 'no-cache, no-transform');
  ctx.set('X-Accel-Buffering', 'no');
  let sent = positionOf(lastEventId);
  // Over: one `done` — after the rest of the text for a stream resumed mid-way.
  if (isOver(first) && sent === null) {
    stream.end(frame('done', doneOf(first)));
    ctx.body = stream;
    return;
  }

  const runId = first.id;
  const toolCallsSent = new Map<string, 'started' | 'finished'>();
  let ended = false;
  let reading = false;
  let again = false;
  let toolsDue = true;
  let unsubscribe = () => {};
  const ping = setInterval(() => {
    stream.write(': ping\n\n');
    update(); // also covers a notification that never came (a worker that died)
  }, PING_MS);
  const end = () => {
    if (ended) return;
    ended = true;
    clearInterval(ping);
    unsubscribe();
    stream.end();
  };
  // Reads are serialized; a notification arriving during a read triggers one more read.
  const update = (textOnly = false) => {
    if (ended) return;
    if (!textOnly) toolsDue = true;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    void (async () => {
      try {
        do {
          again = false;
          const tools = toolsDue;
          toolsDue = false;
          const run = await readRun(deps.db, runId);
          if (!run || ended) return end();
          const at = { epoch: run.stream_epoch, length: run.snapshot.length };
          const id = `${at.epoch}.${at.length}`;
          if (sent === null || sent.epoch !== at.epoch || sent.length > at.length) {
            stream.write(frame('snapshot', { run_id: run.id, status: run.status, content: run.snapshot }, id));
          } else if (at.length > sent.length) {
            stream.write(frame('delta', { run_id: run.id, text: run.snapshot.slice(sent.length) }, id));
          }
          sent = at;
          if (tools || isOver(run)) for (const [event, data] of await toolCallEvents(deps.db, runId, toolCallsSent)) stream.write(frame(event, data));
          if (isOver(run)) {
            stream.write(frame('done', doneOf(run)));
            return end();
          }
        } while (again);
      } catch (error) {
        deps.log.warn({ err: error, run_id: runId }, 'run events: reading the run failed');
        end();
      } finally {
        reading = false;
      }
    })();
  };

  // Subscribe before the first read, so no snapshot written in between is missed.
  unsubscribe = await notificationHub(deps.db, deps.log).subscribe(RUN_EVENTS_CHANNEL, conversationId, {
    changed: (data) => update(data?.text === true),
    close: end,
  });
  ctx.req.socket.setTimeout(0);
  ctx.res.on('close', end); // client gone (or response finished): stop listening
  ctx.body = stream;
  update();
}
