/**
 * The web side of a metered call: accept it, then wait for its settle notification (Postgres
 * NOTIFY on one LISTEN connection per process, no polling) and answer with it. A caller who hangs
 * up, or a read that outlasts READ_TIMEOUT_MS, cancels the call's job from here: the call settles
 * with the job's end (the hold released at once), the worker's provider call is aborted, and a
 * result arriving later is not billed.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import type { Actor } from '../access/index.ts';
import { AppError } from '../core/errors.ts';
import { notificationHub } from '../db/notifications.ts';
import type { Deps } from '../platform/deps.ts';
import { acceptRead, type CallTerms } from './accept.ts';
import { isOpen, loadCall } from './calls.ts';
import { type CallAnswer, METERED_CALLS_CHANNEL } from './notify.ts';
import type { ReadOperation } from './operation.ts';
import { cancelCall } from './cancel.ts';

/** The web process waits this much longer than the read's own budget, so the worker's precise failure usually arrives first. */
const GRACE_MS = 2_000;

type Wake = 'changed' | 'timeout' | 'hangup' | 'stopping';

export async function callAndWait(deps: Deps, actor: Actor, operation: ReadOperation, terms: CallTerms, input: unknown, ctx: Context): Promise<CallAnswer> {
  const id = randomUUID();
  // What woke the request, in order: notifications, the timer, a hang-up, the process stopping.
  const woken: Wake[] = [];
  // The answer, when the settle notification carried it (else the row is read).
  let answer: CallAnswer | undefined;
  let signal: (() => void) | null = null;
  const wake = (why: Wake) => {
    woken.push(why);
    signal?.();
    signal = null;
  };
  const next = async (): Promise<Wake> => {
    while (woken.length === 0) await new Promise<void>((resolve) => (signal = resolve));
    return woken.shift()!;
  };
  // Listen before the call exists, so its settle cannot be missed however fast the worker is.
  const unsubscribe = await notificationHub(deps.db, deps.log).subscribe(METERED_CALLS_CHANNEL, id, {
    changed: (data) => {
      if (data?.call) answer = data.call as CallAnswer;
      wake('changed');
    },
    close: () => wake('stopping'),
  });
  const onClose = () => {
    if (!ctx.res.writableEnded) wake('hangup');
  };
  let timer: NodeJS.Timeout | undefined;
  // Before accepting: a caller who hangs up while the call is being accepted is heard too.
  ctx.res.once('close', onClose);
  try {
    await acceptRead(deps, actor, operation, terms, input, { id, requestId: ctx.state.requestId as string | undefined });
    timer = setTimeout(() => wake('timeout'), deps.config.READ_TIMEOUT_MS + GRACE_MS);
    for (;;) {
      const why = await next();
      if (why === 'changed') {
        if (answer && !isOpen(answer)) return answer;
        const row = await loadCall(deps.db, id);
        if (row && !isOpen(row)) return row;
        continue;
      }
      if (why === 'timeout') return await cancelCall(deps, id, { code: 'timeout', message: 'no answer in time' });
      // Nobody will read the answer (hung up) or can wait for it (stopping): give the hold back now.
      const row = await cancelCall(deps, id, { code: 'canceled', message: why === 'hangup' ? 'the caller hung up' : 'the web process stopped' });
      if (why === 'stopping' && row.status === 'canceled') throw new AppError('unavailable', 'the service is restarting; nothing was charged, retry the call');
      return row;
    }
  } finally {
    if (timer) clearTimeout(timer);
    ctx.res.off('close', onClose);
    unsubscribe();
  }
}
