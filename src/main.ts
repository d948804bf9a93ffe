// `npm start`: the whole service on one machine. Migrates, then runs one web and one worker
// process (real separate processes, as in production) on the embedded PostgreSQL when
// DATABASE_URL is unset. Ctrl-C (or SIGTERM) stops both gracefully, then the database, last.
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveJwtSecret } from './auth/secret.ts';
import { loadConfigOrExit } from './config/load.ts';
import { resolveDatabase } from './platform/database-url.ts';
import { createLogger } from './platform/logger.ts';
import { release } from './app/release.ts';
import { onShutdown } from './platform/shutdown.ts';
import { ensurePortFree, exitOnFailedStart } from './platform/startup.ts';
import { DOCS_PATH } from './service/docs.ts';

const config = loadConfigOrExit();
const log = createLogger(config, 'start');
const children: ChildProcess[] = [];
let stopping = false;

async function start() {
  // Before anything else: a busy port ends a second `npm start` at once, with nothing migrated.
  await ensurePortFree('PORT', config.PORT, config.HOST);
  const database = await resolveDatabase(config, log);
  await release(database.url, log);
  // Children get the resolved database and secret, so they neither start Postgres nor race on the secret file.
  const jwtSecret = await resolveJwtSecret(config);
  const env = { ...process.env, DATABASE_URL: database.url, ...(jwtSecret && { JWT_SECRET: jwtSecret }) };
  if (stopping) return database;
  const web = spawn('./web.ts', 'web', env);
  spawn('../workers/main.ts', 'worker', env);
  web.on('message', (message: { type?: string; url?: string }) => {
    if (message.type === 'ready') process.stdout.write(banner(message.url!, database));
  });
  return database;
}

/** What a person starting the service needs first: where the API, its reference and its data are. */
function banner(url: string, database: { url: string; embedded?: unknown }): string {
  const lines = [
    `Workspace Platform is serving ${url}`,
    `  API reference: ${url}${DOCS_PATH}   OpenAPI: ${url}/openapi.json`,
    database.embedded
      ? `  Database (embedded PostgreSQL): ${redactPassword(database.url)} (password in ${path.resolve(config.DATA_DIR, 'pg-credentials.json')})\n  Data directory: ${path.resolve(config.DATA_DIR)} (database, JWT secret; kept across restarts)`
      : `  Database: DATABASE_URL (${redactPassword(database.url)})`,
    `  A token: TOKEN=$(npm run -s token -- --sub alice)`,
  ];
  return `\n${lines.join('\n')}\n\n`;
}

/** A connection string without its password: a terminal's scrollback and a shared screen are no place for it. */
function redactPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'set';
  }
}

function spawn(file: string, name: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = fork(fileURLToPath(new URL(file, import.meta.url)), [], { env });
  child.on('exit', (code, signal) => {
    if (stopping) return;
    log.error({ process: name, code, signal }, `${name} process exited; stopping`);
    void shutdown().then(() => process.exit(1));
  });
  children.push(child);
  return child;
}

/** The children first (each drains its own work), then the embedded database they used. */
async function shutdown(): Promise<void> {
  stopping = true;
  const database = await starting.catch(() => undefined);
  await Promise.all(children.map(stopChild));
  await database?.embedded?.stop();
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    // Under Ctrl-C the child has its own SIGINT already; SIGTERM covers a stop sent to this process alone.
    child.kill('SIGTERM');
  });
}

const starting = start();
// Registered before start-up ends: a stop during migrations waits for them, then stops what started.
onShutdown(log, shutdown);
await starting.catch(exitOnFailedStart);
