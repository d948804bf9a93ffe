import { createServer } from 'node:net';

/** A start that cannot go on for a reason the person starting it can fix (a busy port): one line, no stack. */
export class StartupRefusal extends Error {}

/** The one line for a port that cannot be listened on, or undefined for any other failure. */
export function portRefusal(error: unknown, variable: string, port: number, host: string): StartupRefusal | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') return new StartupRefusal(`${variable} ${port} is in use (${host}:${port}): stop what listens there or set another ${variable}`);
  if (code === 'EACCES') return new StartupRefusal(`${variable} ${port} may not be listened on by this user (${host}:${port}): set another ${variable}`);
  return undefined;
}

/**
 * Binds the port and lets it go again: a port in use is found before any work starts (initdb,
 * migrations, children), not when the web process listens, long after.
 */
export async function ensurePortFree(variable: string, port: number, host: string): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const server = createServer();
    server.once('error', (error) => reject(portRefusal(error, variable, port, host) ?? error));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve()));
  });
}

/** An entry point's end on a failed start: a refusal as its one line, anything else with its stack; exit 1 either way. */
export function exitOnFailedStart(error: unknown): never {
  if (error instanceof StartupRefusal) process.stderr.write(`${error.message}\n`);
  else console.error(error);
  process.exit(1);
}
