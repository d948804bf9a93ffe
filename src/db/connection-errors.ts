/**
 * Errors that say the database cannot be reached — refused or dropped connections, a server
 * shutting down or starting up, no connection in time — as opposed to a statement that failed.
 * The web process answers them `503 unavailable` (a client may retry); a worker pauses job
 * pick-up on them (workers/database-watch.ts).
 */
const connectionCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  // admin_shutdown, crash_shutdown, cannot_connect_now (starting up / shutting down)
  '57P01',
  '57P02',
  '57P03',
]);
const connectionMessages =
  /Connection terminated|connection error|not queryable|timeout exceeded when trying to connect|Timeout acquiring a connection|ECONNREFUSED|ECONNRESET|terminating connection|the database system is (starting up|shutting down|in recovery mode)/i;

export function isConnectionError(error: unknown): boolean {
  for (let current = error, depth = 0; current && typeof current === 'object' && depth < 5; depth++) {
    const { code, message, cause, errors } = current as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string' && (connectionCodes.has(code) || code.startsWith('08'))) return true;
    if (typeof message === 'string' && connectionMessages.test(message)) return true;
    // An AggregateError (a connect attempt to every address of a host) names its causes in `errors`.
    if (Array.isArray(errors) && errors.some((inner) => isConnectionError(inner))) return true;
    current = cause;
  }
  return false;
}
