import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Logger } from './logger.ts';

/**
 * SIGTERM/SIGINT: run `stop` once (stop taking work, finish what is in flight), then exit 0.
 * A repeated signal is ignored (Ctrl-C reaches `npm start` and its children, which are also sent
 * SIGTERM by their parent), except a second SIGINT: pressing Ctrl-C twice exits at once. Under npm
 * one Ctrl-C arrives twice (the terminal's, and npm's copy to the script it runs), so there the
 * first repeat is that copy, not a second press.
 */
export function onShutdown(log: Logger, stop: () => Promise<void>): void {
  let stopping: NodeJS.Signals | undefined;
  let npmCopyPending = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      if (signal !== 'SIGINT' || stopping !== 'SIGINT') return;
      if (npmCopyPending) {
        npmCopyPending = false;
        return;
      }
      process.exit(1);
    }
    stopping = signal;
    npmCopyPending = signal === 'SIGINT' && runByNpm();
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

/** Whether npm started this process itself (`npm start`, `npm run worker`): npm relays SIGINT and SIGTERM to it. */
function runByNpm(): boolean {
  if (!process.env.npm_lifecycle_event) return false;
  return /(^|[/\s])npm(-cli\.js)?(\s|\0|$)/.test(parentCommand());
}

function parentCommand(): string {
  try {
    return readFileSync(`/proc/${process.ppid}/cmdline`, 'utf8');
  } catch {
    try {
      return execFileSync('ps', ['-o', 'command=', '-p', String(process.ppid)], { encoding: 'utf8' });
    } catch {
      return '';
    }
  }
}
