import { pino, type Logger } from 'pino';
import type { Config } from '../config/schema.ts';

export type { Logger };

export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, name: string): Logger {
  return pino({
    name,
    level: config.LOG_LEVEL,
    redact: { paths: ['req.headers.authorization', '*.password', '*.secret'], censor: '[redacted]' },
  });
}
