import { configSchema, type Config } from './schema.ts';

export class ConfigError extends Error {}

/** Parses the environment; throws a ConfigError whose message is one line naming the variable. */
export function parseConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = configSchema.safeParse(env);
  if (result.success) return result.data;
  const first = result.error.issues[0]!;
  const name = first.path.join('.') || 'environment';
  throw new ConfigError(`Invalid configuration: ${name} ${first.message}`);
}

/** For process entry points: a bad variable prints one line and exits 1. */
export function loadConfigOrExit(env: Record<string, string | undefined> = process.env): Config {
  try {
    return parseConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}
