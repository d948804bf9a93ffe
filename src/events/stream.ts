/**
 * The live event stream (Server-Sent Events) of an organization, resumable exactly.
 *
 * Order and resumption. Sequence numbers are taken when a row is inserted but become visible when
 * its transaction commits, so a lower number may appear after a higher one was read: a reader
 * that resumes "after seq N" would skip it. Each row therefore also stores the id of the
 * transaction that wrote it (`xid`, src/core/events.ts), and the stream delivers rows in
 * (xid, seq) order, only those whose xid is below the xmin of the reading statement's snapshot:
 * every transaction below xmin has ended (committed or rolled back), so no row can ever appear
 * below a position the stream has passed. A row committed above xmin (an older transaction is
 * still open) waits until that transaction ends; the stream re-reads shortly (it gets no
 * notification for the older one's end). Resuming from an event id restarts at that event's
 * (xid, seq): no gap, no duplicate, whichever web process serves the reconnection.
 *
 * Wake-ups. Recording an event NOTIFYs at commit (keyed by organization); each web process has one
 * LISTEN connection for all its streams (src/db/notifications.ts, counted in the connection
 * budget). Every heartbeat also polls, covering a lost notification.
 *
 * Access is decided per batch as it is delivered, with the caller's membership read again: an
 * event about a resource the caller cannot read (now) is skipped, and a caller who left the
 * organization is disconnected. The stream ends when the token that opened it expires: the client
 * reconnects with a fresh one and Last-Event-ID, and misses nothing.
 */
import { PassThrough } from 'node:stream';
import type { Knex } from 'knex';
import type { Context } from 'koa';
import { Actor } from '../access/index.ts';
import { EVENTS_CHANNEL, type EventType } from '../core/events.ts';
import { AppError, badRequest } from '../core/errors.ts';
import { notificationHub, waitingSubscribers } from '../db/notifications.ts';
import type { Db } from '../db/knex.ts';
import { inTransaction } from '../db/transaction.ts';
import type { Deps } from '../platform/deps.ts';
import { type EventRow, presentEvent } from './presenter.ts';
import { EVENT_RETENTION_DAYS } from './schema.ts';
import { visibleEventSql } from './visibility.ts';

/** Open streams one caller may hold at once, across all web processes (429 beyond). */
export const STREAMS_PER_CALLER = 5;
const HEARTBEAT_MS = 15_000;
/** A stream's lease outlives a few missed heartbeats; a dead process's streams lapse after it. */
const LEASE_SECONDS = 60;
/**
 * How soon to look again when committed events wait behind an older open transaction (no
 * notification tells when that one ends): soon, then backing off while it stays open.
 */
const HELD_BACK_RETRY_MS = 100;
const HELD_BACK_RETRY_MAX_MS = 2_000;
const BATCH = 200;
/** The longest delay a Node timer takes (about 24.8 days); a token valid longer is re-armed. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** How many event streams this process serves now. */
export const openEventStreams = (db: Db): number => waitingSubscribers(db, EVENTS_CHANNEL);

interface Position {
  xid: string;
  seq: string;
}

interface StreamRow extends EventRow {
  xid: string;
  seq: string;
  ready: boolean;
  visible: boolean | null;
}

export interface StreamOptions {
  lastEventId?: string | undefined;
  types?: EventType[] | undefined;
}

const frame = (row: EventRow) => `id: ${row.id}\nevent: ${row.type}\ndata: ${JSON.stringify(presentEvent(row))}\n\n`;

/** Where to start: right after the given event, or now (everything not yet below any snapshot's xmin). */
async function startPosition(db: Db, organizationId: string, lastEventId: string | undefined): Promise<Position> {
  if (lastEventId === undefined) {
    const { rows } = await db.raw(`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xid`);
    // (xmin, 0): every row of a transaction at or after xmin is still to come.
    return { xid: rows[0].xid as string, seq: '0' };
  }
  const row = (await db('events')
    .where({ id: lastEventId, organization_id: organizationId })
    .whereRaw(`created_at > now() - make_interval(days => ?)`, [EVENT_RETENTION_DAYS])
    .first(db.raw('xid::text AS xid'), db.raw('seq::text AS seq'))) as Position | undefined;
  if (!row)
    throw badRequest(
      `Last-Event-ID: "${lastEventId}" is not an event of this organization from the last ${EVENT_RETENTION_DAYS} days; list GET /organizations/{organization_id}/events to catch up, then stream without it`,
      ['last-event-id'],
    );
  return row;
}

/** Takes one of the caller's stream slots (429 when all are held); returns the lease id. */
async function takeLease(db: Db, userId: string, organizationId: string): Promise<string> {
  return inTransaction(db, async (trx) => {
    // One caller's opens are serialized, so two at once cannot both take the last slot.
    await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`event-stream-leases:${userId}`]);
    await trx('event_stream_leases').where('user_id', userId).where('expires_at', '<=', trx.fn.now()).delete();
    const open = (await trx('event_stream_leases').where('user_id', userId).count('* as n').first()) as { n: string };
    if (Number(open.n) >= STREAMS_PER_CALLER)
      throw new AppError('rate_limited', `at most ${STREAMS_PER_CALLER} event streams may be open per caller; close one before opening another`, [], {
        headers: { 'Retry-After': String(Math.ceil(HEARTBEAT_MS / 1000)) },
      });
    const [lease] = (await trx('event_stream_leases')
      .insert({ user_id: userId, organization_id: organizationId, expires_at: trx.raw(`now() + make_interval(secs => ?)`, [LEASE_SECONDS]) })
      .returning('id')) as { id: string }[];
    return lease!.id;
  });
}

/**
 * GET /organizations/{id}/events/stream: `: connected`, then each event the caller may see as
 * `id: <event id>`, `event: <type>`, `data: <the event JSON>`; `: ping` every 15 s. Ends at the
 * token's `exp` (with `: token expired`), when the caller stops being a member, or the process stops.
 */
export async function streamEvents(deps: Pick<Deps, 'db' | 'log'>, actor: Actor, organizationId: string, options: StreamOptions, ctx: Context): Promise<void> {
  let position = await startPosition(deps.db, organizationId, options.lastEventId);
  const leaseId = await takeLease(deps.db, actor.userId, organizationId);
  const stream = new PassThrough();
  ctx.type = 'text/event-stream';
  ctx.set('Cache-Control', 'no-cache, no-transform');
  ctx.set('X-Accel-Buffering', 'no');

  let ended = false;
  let reading = false;
  let again = false;
  let retry: NodeJS.Timeout | null = null;
  let heldBackDelay = HELD_BACK_RETRY_MS;
  let unsubscribe = () => {};
  const ping = setInterval(() => {
    stream.write(': ping\n\n');
    void deps
      .db('event_stream_leases')
      .where({ id: leaseId })
      .update({ expires_at: deps.db.raw(`now() + make_interval(secs => ?)`, [LEASE_SECONDS]) })
      .catch((error: unknown) => deps.log.warn({ err: error }, 'event stream: renewing its lease failed'));
    wake(); // the polling fallback
  }, HEARTBEAT_MS);
  // The token's exp: the stream acts for its bearer no longer than the token does.
  let expiry: NodeJS.Timeout | null = null;
  const expireAt = (at: Date) => {
    const left = at.getTime() - Date.now();
    if (left > MAX_TIMER_MS) {
      expiry = setTimeout(() => expireAt(at), MAX_TIMER_MS);
      return;
    }
    expiry = setTimeout(
      () => {
        stream.write(': token expired\n\n');
        end();
      },
      Math.max(left, 0),
    );
  };
  if (actor.caller.expiresAt) expireAt(actor.caller.expiresAt);
  let closed = () => {};
  const stopped = new Promise<void>((resolve) => (closed = resolve));
  /** A slow reader holds the next batch back rather than growing the buffer without bound. */
  const drained = () => (stream.writableNeedDrain ? Promise.race([new Promise<void>((resolve) => stream.once('drain', resolve)), stopped]) : Promise.resolve());
  const end = () => {
    if (ended) return;
    ended = true;
    closed();
    clearInterval(ping);
    if (retry) clearTimeout(retry);
    if (expiry) clearTimeout(expiry);
    unsubscribe();
    stream.end();
    void deps
      .db('event_stream_leases')
      .where({ id: leaseId })
      .delete()
      .catch(() => undefined);
  };

  /** One batch in order from `position`: sends what the caller may see, advances past everything ready. Returns whether to read on. */
  const readBatch = async (): Promise<'more' | 'held_back' | 'idle' | 'gone'> => {
    // Access as it is now: the membership read again for every batch.
    const now = new Actor(actor.caller, deps.db);
    const membership = await now.membership(organizationId);
    const viewer = membership && (await now.viewer(organizationId));
    if (!membership || !viewer) return 'gone';
    const visible = visibleEventSql(viewer, membership);
    const typed = options.types ? ' AND e.type = ANY(?::text[])' : '';
    const { rows } = (await deps.db.raw(
      `WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
       SELECT e.id, e.type, e.organization_id, e.created_at, e.xid::text AS xid, e.seq::text AS seq, e.xid < s.xmin AS ready,
              CASE WHEN e.xid < s.xmin THEN (${visible.sql}${typed}) END AS visible,
              CASE WHEN e.xid < s.xmin THEN e.data END AS data
         FROM events e, s
        WHERE e.organization_id = ? AND (e.xid, e.seq) > (?::xid8, ?::bigint)
        ORDER BY e.xid, e.seq
        LIMIT ${BATCH}`,
      [...visible.bindings, ...(options.types ? [options.types] : []), organizationId, position.xid, position.seq] as Knex.RawBinding[],
    )) as { rows: StreamRow[] };
    // The membership read again after the batch: one removed or changed while it was read sends
    // nothing of it (the batch is read again under the new role, or the stream ends).
    if (rows.some((row) => row.visible)) {
      const after = await new Actor(actor.caller, deps.db).membership(organizationId);
      if (!after) return 'gone';
      if (after.role !== membership.role) return 'more';
    }
    for (const row of rows) {
      // Rows come in (xid, seq) order, so the ready ones are a prefix: stop at the first still held back.
      if (!row.ready) return 'held_back';
      if (ended) return 'idle';
      if (row.visible) stream.write(frame(row));
      position = { xid: row.xid, seq: row.seq };
    }
    return rows.length === BATCH ? 'more' : 'idle';
  };

  // Reads are serialized; a wake-up arriving during a read triggers one more read.
  const wake = () => {
    if (ended) return;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    void (async () => {
      try {
        let state: Awaited<ReturnType<typeof readBatch>>;
        do {
          again = false;
          await drained();
          state = await readBatch();
          if (state === 'gone') return end();
        } while ((again || state === 'more') && !ended);
        if (state !== 'held_back') heldBackDelay = HELD_BACK_RETRY_MS;
        else if (!ended && !retry) {
          retry = setTimeout(() => {
            retry = null;
            wake();
          }, heldBackDelay);
          heldBackDelay = Math.min(heldBackDelay * 2, HELD_BACK_RETRY_MAX_MS);
        }
      } catch (error) {
        deps.log.warn({ err: error, organization_id: organizationId }, 'event stream: reading the events failed');
        end();
      } finally {
        reading = false;
      }
    })();
  };

  try {
    // Subscribe before the first read, so no event committed in between is missed.
    unsubscribe = await notificationHub(deps.db, deps.log).subscribe(EVENTS_CHANNEL, organizationId, { changed: wake, close: end });
  } catch (error) {
    end();
    throw error;
  }
  ctx.req.socket.setTimeout(0);
  ctx.res.on('close', end); // client gone (or response finished): stop listening
  ctx.body = stream;
  stream.write(': connected\n\n');
  wake();
}
