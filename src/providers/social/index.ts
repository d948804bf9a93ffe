import { HttpSocialProvider } from './http.ts';
import { SandboxSocialProvider } from './sandbox.ts';
import type { SocialProvider } from './types.ts';

export { HttpSocialProvider } from './http.ts';
export { SandboxSocialProvider } from './sandbox.ts';
export type { SocialProvider } from './types.ts';

export interface SocialProviderOptions {
  apiUrl?: string | undefined;
  apiKey?: string | undefined;
  /** Tuning for the HTTP adapter (tests use small values); defaults suit production. */
  headersTimeoutMs?: number | undefined;
  bodyTimeoutMs?: number | undefined;
  maxRetries?: number | undefined;
}

/** SOCIAL_API_URL set → the real service over HTTP; unset → deterministic sandbox data. */
export function createSocialProvider(options: SocialProviderOptions): SocialProvider {
  if (!options.apiUrl) return new SandboxSocialProvider();
  return new HttpSocialProvider({
    apiUrl: options.apiUrl,
    apiKey: options.apiKey,
    ...(options.headersTimeoutMs !== undefined && { headersTimeoutMs: options.headersTimeoutMs }),
    ...(options.bodyTimeoutMs !== undefined && { bodyTimeoutMs: options.bodyTimeoutMs }),
    ...(options.maxRetries !== undefined && { maxRetries: options.maxRetries }),
  });
}
