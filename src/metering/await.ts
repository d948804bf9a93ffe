/**
 * A metered read made by the platform itself on a user's behalf (a chat turn's tool call): the same
 * accept → job → settle path as the routes (./wait.ts), waiting for the settle notification
 * instead of an HTTP request. The caller picks the call's id, so a retried caller finds the call it
 * accepted before and waits for it instead of paying twice. Past its `deadline` the call is
 * canceled (`timeout`: released, nothing charged, unless its result won the race). Aborting
 * `signal` only stops the waiting: the call settles on its own (a run-lock call is then refused at
 * settle if its turn was stopped).
 */
import type { Actor } from '../access/index.ts';
import { notificationHub } from '../db/notifications.ts';
import type { Deps } from '../platform/deps.ts';
import { acceptRead, type CallTerms } from './accept.ts';
import { type CallRow, isOpen, loadCall } from './calls.ts';
import { cancelCall } from './cancel.ts';
import { METERED_CALLS_CHANNEL } from './notify.ts';
import type { ReadOperation } from './operation.ts';

/** A backstop re-read, should a notification be lost. */
const RECHECK_MS = 5_000;

export async function callAndAwait(
  deps: Deps,
  actor: Actor,
  operation: ReadOperation,
  terms: CallTerms,
  input: unknown,
  options: { id: string; signal: AbortSignal; deadline: AbortSignal },
): Promise<CallRow> {
  const { id, signal, deadline } = options;
  // A notification between a read and the wait is remembered, so the next wait returns at once.
  let woken = false;
  let resolveWait: (() => void) | null = null;
  const wake = () => {
    woken = true;
    resolveWait?.();
  };
  const unsubscribe = await notificationHub(deps.db, deps.log).subscribe(METERED_CALLS_CHANNEL, id, { changed: () => wake(), close: () => wake() });
  const onAbort = () => wake();
  signal.addEventListener('abort', onAbort);
  deadline.addEventListener('abort', onAbort);
  try {
    if (!(await loadCall(deps.db, id))) await acceptRead(deps, actor, operation, terms, input, { id });
    for (;;) {
      woken = false;
      const row = (await loadCall(deps.db, id))!;
      if (!isOpen(row)) return row;
      signal.throwIfAborted();
      if (deadline.aborted) return await cancelCall(deps, id, { code: 'timeout', message: 'the tool call ran out of time' });
      if (woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, RECHECK_MS);
        resolveWait = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      resolveWait = null;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    deadline.removeEventListener('abort', onAbort);
    unsubscribe();
  }
}
