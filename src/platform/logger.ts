import { type DestinationStream, type Logger, pino, symbols } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from '../config/schema.ts';
import { workContext } from './work-context.ts';

export type { Logger };

const contextKeys = ['request_id', 'job_id', 'queue'] as const;

/**
 * Stamps every line with the work it belongs to (src/platform/work-context.ts): the request id, and in
 * a worker the job id and queue, so one grep follows a request into the jobs it caused. Only keys that
 * are set, and none a child logger already binds: pino writes bindings and mixin fields side by side,
 * so a key in both would appear twice in the line. A binding shows in the child's serialized
 * bindings as `,"key":` (a string check, no parse per line). Fields passed to the call itself win
 * over the mixin (pino's merge), so they are never duplicated either.
 */
function workContextFields(_merge: object, _level: number, logger: Logger): Record<string, string> {
  const context = workContext();
  const fields: Record<string, string> = {};
  let bound: string | undefined;
  for (const key of contextKeys) {
    const value = context[key];
    if (value === undefined) continue;
    bound ??= String((logger as unknown as Record<symbol, unknown>)[symbols.chindingsSym] ?? '');
    if (!bound.includes(`,"${key}":`)) fields[key] = value;
  }
  return fields;
}

/**
 * Where a process logs when nothing else is given: on a terminal (a person reading `npm start`),
 * pino-pretty's readable lines, one a log call (fields inline: a request is one line, not six),
 * written synchronously (no worker thread to flush on exit);
 * anywhere else (a platform's log collector, a pipe, a file) one JSON object a line.
 */
export function consoleDestination(stdout: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout): DestinationStream | undefined {
  if (!stdout.isTTY) return undefined;
  return pretty({ destination: stdout, sync: true, colorize: true, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}

/** The process's logger; `destination` replaces stdout (tests read the lines back). */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, name: string, destination: DestinationStream | undefined = consoleDestination()): Logger {
  const options = {
    name,
    level: config.LOG_LEVEL,
    redact: { paths: ['req.headers.authorization', '*.password', '*.secret'], censor: '[redacted]' },
    mixin: workContextFields,
  };
  return destination ? pino(options, destination) : pino(options);
}
