// `npm start`: the whole service on one machine. Migrates, then runs one web and one worker
// process (real separate processes, as in production) on the embedded PostgreSQL when
// DATABASE_URL is unset. Ctrl-C stops both gracefully.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { resolveJwtSecret } from './auth/secret.ts';
import { loadConfigOrExit } from './config/load.ts';
import { resolveDatabase } from './platform/database-url.ts';
import { createLogger } from './platform/logger.ts';
import { release } from './platform/release.ts';
import { onShutdown } from './platform/shutdown.ts';

const config = loadConfigOrExit();
const log = createLogger(config, 'start');
const { url: databaseUrl, embedded } = await resolveDatabase(config, log);
await release(databaseUrl, log);

// Children get the resolved database and secret, so they neither start Postgres nor race on the secret file.
const jwtSecret = await resolveJwtSecret(config);
const env = { ...process.env, DATABASE_URL: databaseUrl, ...(jwtSecret && { JWT_SECRET: jwtSecret }) };
const children: ChildProcess[] = [];
let stopping = false;

function spawn(file: string, name: string): ChildProcess {
  const child = fork(fileURLToPath(new URL(file, import.meta.url)), [], { env });
  child.on('exit', (code, signal) => {
    if (stopping) return;
    log.error({ process: name, code, signal }, `${name} process exited; stopping`);
    void shutdown().then(() => process.exit(1));
  });
  children.push(child);
  return child;
}

async function shutdown(): Promise<void> {
  stopping = true;
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
  await embedded?.stop();
}

const web = spawn('./web.ts', 'web');
spawn('../workers/main.ts', 'worker');
web.on('message', (message: { type?: string; url?: string }) => {
  if (message.type === 'ready') process.stdout.write(`\nWorkspace Platform is serving ${message.url}  (OpenAPI: ${message.url}/openapi.json)\n\n`);
});
onShutdown(log, shutdown);
