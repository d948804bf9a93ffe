import { type ChildProcess, fork } from 'node:child_process';
import type { Logger } from './logger.ts';

/** A child process of `npm start` that reports `{type: 'ready'}` once it serves (web) or works (worker). */
export interface SupervisedProcess {
  /** Its process now; a restart replaces it. */
  current(): ChildProcess | undefined;
  /** Marks the stop at once (an exit from here on is no crash), then stops the process and waits for it. */
  stop(): Promise<void>;
}

export interface SuperviseOptions {
  name: string;
  /** The module to fork. */
  file: string;
  env: NodeJS.ProcessEnv;
  log: Logger;
  /** Every `ready` message, with the process's restarts so far (0: its first start). */
  onReady?(message: Record<string, unknown>, restarts: number): void;
  /** It died before its first `ready` (a busy port, a bad setting): the whole cannot run. */
  onFailedStart(code: number | null, signal: NodeJS.Signals | null): void;
  /** First restart delay, doubled per crash in a row up to `maxDelayMs`; back to the first once a process stayed up `stableMs`. */
  backoff?: { firstDelayMs: number; maxDelayMs: number; stableMs: number };
}

const defaultBackoff = { firstDelayMs: 1000, maxDelayMs: 30_000, stableMs: 60_000 };

/**
 * One process's death is not an outage: a child that dies after it was ready is restarted with
 * backoff and logged, while the others keep serving. One that never got ready has a reason a
 * restart would not fix (it printed it), so that is the caller's to end.
 */
export function supervise(options: SuperviseOptions): SupervisedProcess {
  const { name, log } = options;
  const backoff = options.backoff ?? defaultBackoff;
  let child: ChildProcess | undefined;
  let stopping = false;
  let everReady = false;
  let restarts = 0;
  let delayMs = backoff.firstDelayMs;
  let pending: NodeJS.Timeout | undefined;

  const launch = () => {
    pending = undefined;
    if (stopping) return;
    const started = fork(options.file, [], { env: options.env });
    let readyAt: number | undefined;
    started.on('message', (message: { type?: string }) => {
      if (message?.type !== 'ready') return;
      readyAt = Date.now();
      if (everReady) log.info({ process: name, child_pid: started.pid, restarts }, `${name} process restarted`);
      everReady = true;
      options.onReady?.(message as Record<string, unknown>, restarts);
    });
    started.on('exit', (code, signal) => {
      if (stopping) return;
      if (!everReady) {
        log.error({ process: name, code, signal }, `${name} process exited before it was ready; stopping`);
        options.onFailedStart(code, signal);
        return;
      }
      if (readyAt !== undefined && Date.now() - readyAt >= backoff.stableMs) delayMs = backoff.firstDelayMs;
      log.error({ process: name, child_pid: started.pid, code, signal, restart_in_ms: delayMs }, `${name} process exited; restarting it`);
      restarts++;
      pending = setTimeout(launch, delayMs);
      delayMs = Math.min(delayMs * 2, backoff.maxDelayMs);
    });
    child = started;
  };
  launch();

  return {
    current: () => child,
    stop() {
      stopping = true;
      clearTimeout(pending);
      return child ? stopChild(child) : Promise.resolve();
    },
  };
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    // Under Ctrl-C the child has its own SIGINT already; SIGTERM covers a stop sent to this process alone.
    child.kill('SIGTERM');
  });
}
