import type { Logger } from './logger.ts';

/**
 * SIGTERM/SIGINT: run `stop` once (stop taking work, finish what is in flight), then exit 0.
 * A repeated signal is ignored (Ctrl-C reaches `npm start` and its children, which are also sent
 * SIGTERM by their parent), except a second SIGINT: pressing Ctrl-C twice exits at once.
 */
export function onShutdown(log: Logger, stop: () => Promise<void>): void {
  let stopping: NodeJS.Signals | undefined;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      if (signal === 'SIGINT' && stopping === 'SIGINT') process.exit(1);
      return;
    }
    stopping = signal;
    log.info({ signal }, 'shutting down');
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}
