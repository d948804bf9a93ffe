// The `web` process: serves the HTTP API. Scale by running more of them; they share only Postgres.
import { createServer, type Server } from 'node:http';
import { resolveJwtSecret } from './auth/secret.ts';
import { loadConfigOrExit } from './config/load.ts';
import type { Config } from './config/schema.ts';
import { connectionBudget } from './db/budget.ts';
import { createDb } from './db/knex.ts';
import { setTransactionGuard } from './db/transaction-guard.ts';
import { createApp, type AppOptions } from './http/app.ts';
import { answerClientError, answerUnmetExpectation, awaitingContinue } from './http/errors.ts';
import { createBoss } from './jobs/boss.ts';
import { knexBossDb } from './jobs/boss-db.ts';
import { resolveDatabase } from './platform/database-url.ts';
import { routeTable } from './app/routes.ts';
import { answerUsage } from './platform/cli-usage.ts';
import { createLogger, type Logger } from './platform/logger.ts';
import { onShutdown } from './platform/shutdown.ts';
import { ensurePortFree, exitOnFailedStart, portRefusal } from './platform/startup.ts';
import { openRunEventStreams } from './conversations/index.ts';
import { closeNotifications } from './db/notifications.ts';
import { createDeps } from './app/deps.ts';
import { packageVersion } from './platform/version.ts';
import { currentAlerts } from './operations/index.ts';
import { startWebMetrics } from './metrics/index.ts';

export { packageVersion };

export interface WebProcess {
  server: Server;
  url: string;
  /** Where the separate metrics port serves `GET /metrics` (METRICS_PORT), else undefined. */
  metricsUrl: string | undefined;
  /** Run-event (SSE) streams open now. */
  runEventStreams(): number;
  stop(): Promise<void>;
}

/** Starts the API on `databaseUrl`; `stop()` stops taking connections and drains in-flight requests. */
export async function startWeb(config: Config, databaseUrl: string, log: Logger, extra: Pick<AppOptions, 'extraRoutes'> = {}): Promise<WebProcess> {
  const budget = connectionBudget(config, 'web');
  setTransactionGuard(config.DB_TRANSACTION_GUARD, (message) => log.warn(message));
  const db = createDb(databaseUrl, { max: budget.knex, applicationName: 'workspace-web' });
  const boss = createBoss(databaseUrl, 'web', budget.boss ? { max: budget.boss } : { db: knexBossDb(db) });
  boss.on('error', (error) => log.error({ err: error }, 'pg-boss'));
  await boss.start();
  const deps = createDeps(config, db, boss, log);
  // Undefined unless METRICS_TOKEN or METRICS_PORT exposes them (src/metrics/process.ts).
  const metrics = await startWebMetrics(config, db, log, { alerts: () => currentAlerts({ db, config }) });
  const app = createApp({
    deps,
    routes: routeTable,
    jwtSecret: await resolveJwtSecret(config),
    version: packageVersion,
    ...(metrics && { metrics: { registry: metrics.registry, token: metrics.appToken } }),
    ...extra,
  });

  // Requests node refuses on its own get the JSON Error body too: a missing Host (checked by the app
  // instead: src/http/errors.ts requireHost), an unsupported Expect (417), and what its parser
  // refuses (e.g. 431 for oversized headers).
  const handle = app.callback();
  const server = createServer({ requireHostHeader: false }, handle);
  server.on('checkExpectation', answerUnmetExpectation);
  // Expect: 100-continue is answered only when the operation reads the body, after authentication
  // (src/http/route.ts bodyReader): an unauthenticated client gets its 401 before it sends the body.
  server.on('checkContinue', (req, res) => handle(awaitingContinue(req), res));
  server.on('clientError', answerClientError);
  server.listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) =>
    server.once('listening', resolve).once('error', (error) => reject(portRefusal(error, 'PORT', config.PORT, config.HOST) ?? error)),
  );
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = config.PUBLIC_URL ?? `http://localhost:${port}`;

  return {
    server,
    url,
    metricsUrl: metrics?.url,
    runEventStreams: () => openRunEventStreams(db),
    async stop() {
      // Ends the open SSE streams and waits (they would hold the server open) and the LISTEN connection.
      await closeNotifications(db);
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), config.SHUTDOWN_GRACE_MS);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      });
      await metrics?.stop();
      await boss.stop({ graceful: false, close: true });
      await db.destroy();
    },
  };
}

// No top-level await: tests import this module, and a module with one cannot be require()d.
async function main(): Promise<void> {
  answerUsage("usage: npm run web\n  The web process alone: serves the HTTP API on PORT (the Procfile's `web`; migrate first with `npm run migrate`).");
  const config = loadConfigOrExit();
  const log = createLogger(config, 'web');
  // Before the embedded database starts: a busy port stops `npm run web` with one line and nothing started.
  await ensurePortFree('PORT', config.PORT, config.HOST);
  const database = resolveDatabase(config, log);
  const web = database.then(({ url }) => startWeb(config, url, log));
  // Registered before start-up ends: a stop meanwhile waits for it, then stops the web and, last, the database it started.
  onShutdown(log, async () => {
    await (await web).stop();
    await (await database).embedded?.stop();
  });
  const { url } = await web;
  log.info({ url }, `web listening on ${url}`);
  process.send?.({ type: 'ready', url });
}

if (import.meta.main) {
  main().catch(exitOnFailedStart);
}
