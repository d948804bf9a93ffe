import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/db/embedded.ts';
import { TEST_JWT_SECRET } from './config.ts';
import { testDatabase } from './hooks.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/**
 * How tests start our processes: `node --import tsx <file>`, as the npm scripts do. (The `tsx`
 * CLI wrapper relays SIGTERM with a 30 ms hand-shake and SIGKILLs the child when a busy machine
 * misses it, so a graceful stop would look like a crash.)
 */
export const nodeWithTsx = (file: string): [string, string[]] => [process.execPath, ['--import', 'tsx', file]];

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface ChildRun {
  child: ChildProcess;
  /** Output so far. */
  stdout(): string;
  stderr(): string;
  exited: Promise<Exit>;
  /** Resolves with the first stdout match (rejects if the process exits first). */
  waitForOutput(pattern: RegExp): Promise<RegExpMatchArray>;
}

/** A child process with its output collected; environment is the parent's plus `env`. */
export function run(command: string, args: string[], env: Record<string, string | undefined>, options: { detached?: boolean } = {}): ChildRun {
  const child = spawn(command, args, {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let stdout = '';
  let stderr = '';
  const watchers: (() => void)[] = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const watch of [...watchers]) watch();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForOutput(pattern) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = stdout.match(pattern);
          if (match) {
            watchers.splice(watchers.indexOf(check), 1);
            resolve(match);
          }
        };
        watchers.push(check);
        check();
        void exited.then((exit) => reject(new Error(`process exited (${exit.code ?? exit.signal}) before printing ${pattern}: ${exit.stderr.slice(-2000)}`)));
      });
    },
  };
}

/**
 * Wraps `start` for a suite: every process it starts in a test is SIGKILLed (its whole process
 * group, so spawn it `detached`) and awaited after that test, whatever the test left running.
 */
export function useChildProcesses<A extends unknown[]>(start: (...args: A) => ChildRun): (...args: A) => ChildRun {
  const started: ChildRun[] = [];
  afterEach(async () => {
    for (const child of started.splice(0)) {
      if (child.child.exitCode === null && child.child.signalCode === null) process.kill(-child.child.pid!, 'SIGKILL');
      await child.exited;
    }
  });
  return (...args) => {
    const child = start(...args);
    started.push(child);
    return child;
  };
}

export interface WebChild {
  url: string;
  run: ChildRun;
  stop(): Promise<Exit>;
}

/** Polls until `url` answers 200 (or the process dies). */
export async function waitUntilHealthy(url: string, process: ChildRun): Promise<void> {
  let exited: Exit | undefined;
  void process.exited.then((exit) => (exited = exit));
  for (;;) {
    if (exited) throw new Error(`process exited (${exited.code ?? exited.signal}) before it was healthy: ${exited.stderr.slice(-2000)}`);
    const ok = await fetch(`${url}/healthz`).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A real `web` process (tsx src/web.ts) on the test database and a free port. */
export async function spawnWeb(env: Record<string, string> = {}): Promise<WebChild> {
  const port = await freePort();
  const child = run(...nodeWithTsx('src/web.ts'), {
    NODE_ENV: 'test',
    DATABASE_URL: testDatabase().url,
    PORT: String(port),
    HOST: '127.0.0.1',
    JWT_SECRET: TEST_JWT_SECRET,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '100000',
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitUntilHealthy(url, child);
  return {
    url,
    run: child,
    async stop() {
      if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGTERM');
      return child.exited;
    },
  };
}

/** A failed test may leave an embedded database running in a session of its own under `dir`: stop it before its files are removed. */
export async function stopLeftoverPostgres(dir: string): Promise<void> {
  const pidFile = path.join(dir, 'pg', 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    process.kill(pid, 'SIGINT');
    for (let waited = 0; existsSync(pidFile) && waited < 15_000; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
  } catch {
    // already gone
  }
}
