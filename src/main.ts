// `npm start`: the whole service on one machine. Migrates, then runs one web and one worker
// process (real separate processes, as in production) on the embedded PostgreSQL when
// DATABASE_URL is unset. A child that dies after it was ready is restarted (src/platform/supervise.ts);
// one that fails before (a bad setting) stops the whole. Ctrl-C (or SIGTERM) stops both
// gracefully, then the database, last.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveJwtSecret } from './auth/secret.ts';
import { loadConfigOrExit } from './config/load.ts';
import { resolveDatabase } from './platform/database-url.ts';
import { answerUsage } from './platform/cli-usage.ts';
import { createLogger } from './platform/logger.ts';
import { release } from './app/release.ts';
import { onShutdown } from './platform/shutdown.ts';
import { ensurePortFree, exitOnFailedStart } from './platform/startup.ts';
import { type SupervisedProcess, supervise } from './platform/supervise.ts';
import { DOCS_PATH } from './service/docs.ts';

answerUsage(`usage: npm start
  Migrates, then runs a web and a worker process on DATABASE_URL, else on an embedded PostgreSQL under
  DATA_DIR (.data). Prints the URL it serves. Settings are environment variables (PORT, DATABASE_URL, …).`);
const config = loadConfigOrExit();
const log = createLogger(config, 'start');
const children: SupervisedProcess[] = [];
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
  spawn('./web.ts', 'web', env, (message, restarts) => {
    if (restarts === 0) process.stdout.write(banner(String(message.url), database));
  });
  spawn('../workers/main.ts', 'worker', env);
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

function spawn(file: string, name: string, env: NodeJS.ProcessEnv, onReady?: (message: Record<string, unknown>, restarts: number) => void): void {
  const child = supervise({
    name,
    file: fileURLToPath(new URL(file, import.meta.url)),
    env,
    log,
    ...(onReady && { onReady }),
    onFailedStart: () => void shutdown().then(() => process.exit(1)),
  });
  children.push(child);
}

/** The children first (each drains its own work), then the embedded database they used. */
async function shutdown(): Promise<void> {
  stopping = true;
  // Marked stopping before any wait: a child ending under the same Ctrl-C is not restarted.
  const stopped = Promise.all(children.map((child) => child.stop()));
  const database = await starting.catch(() => undefined);
  await stopped;
  await database?.embedded?.stop();
}

const starting = start();
// Registered before start-up ends: a stop during migrations waits for them, then stops what started.
onShutdown(log, shutdown);
await starting.catch(exitOnFailedStart);
