import { readFileSync } from 'node:fs';

/** The running release (package.json), shown by /healthz, the OpenAPI document and the workers list. */
export const packageVersion: string = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;
