import { inspect } from 'node:util';

// The running test and when its root `beforeEach` ran (set by test/support/hooks.ts): the wait ends
// just before mocha's own timeout would, so the failure names the condition instead of "Timeout".
const state = globalThis as { __workspaceCurrentTest?: { test: Mocha.Runnable; startedAt: number } };

export interface EventuallyOptions {
  /** Pause between checks. */
  everyMs?: number;
  /** Give up after this long; by default just before the running test's timeout. */
  timeoutMs?: number;
}

type Check<T> = () => Promise<T | undefined | null | false>;

/**
 * Polls `check` until it returns something truthy, and returns that. If it never does, fails with
 * `description` (what should have held) and the last value seen.
 *
 *     await eventually('the import job completed', async () => (await jobState(db, id))?.state === 'completed');
 *
 * The older form `eventually(check, everyMs?)` still works; its message quotes the check's source.
 */
export async function eventually<T>(description: string, check: Check<T>, options?: EventuallyOptions): Promise<T>;
export async function eventually<T>(check: Check<T>, everyMs?: number): Promise<T>;
export async function eventually<T>(first: string | Check<T>, second?: Check<T> | number, third: EventuallyOptions = {}): Promise<T> {
  const [description, check, options] =
    typeof first === 'string' ? [first, second as Check<T>, third] : [describeCheck(first), first, { everyMs: second as number | undefined }];
  const everyMs = options.everyMs ?? 50;
  const started = Date.now();
  const deadline = options.timeoutMs !== undefined ? started + options.timeoutMs : testDeadline();
  let last: unknown;
  for (;;) {
    const value = await check();
    if (value) return value;
    last = value;
    if (Date.now() + everyMs >= deadline) {
      throw new Error(
        `eventually: ${description} — never held (waited ${Date.now() - started} ms; last check returned ${inspect(last, { depth: 3, breakLength: Infinity })})`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Half a second before mocha would time the running test out; no limit outside a test (hooks keep their own timeout). */
function testDeadline(): number {
  const current = state.__workspaceCurrentTest;
  const timeout = current?.test.timeout();
  if (!current || !timeout || timeout <= 0 || timeout >= 2 ** 31 - 1) return Infinity;
  return current.startedAt + timeout - 500;
}

function describeCheck(check: () => unknown): string {
  const source = check.toString().replace(/\s+/g, ' ');
  return `\`${source.length > 300 ? `${source.slice(0, 300)}…` : source}\``;
}
