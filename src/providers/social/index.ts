import { HttpSocialProvider } from './http.ts';
import { SandboxSocialProvider } from './sandbox.ts';
import type { HttpTuning } from '../http-retry.ts';
import type { SocialProvider } from './types.ts';

export { HttpSocialProvider } from './http.ts';
export { SandboxSocialProvider } from './sandbox.ts';
export type { SocialProvider } from './types.ts';

export interface SocialProviderOptions extends HttpTuning {
  apiUrl?: string | undefined;
  apiKey?: string | undefined;
}

/** SOCIAL_API_URL set → the real service over HTTP; unset → deterministic sandbox data. */
export function createSocialProvider(options: SocialProviderOptions): SocialProvider {
  if (!options.apiUrl) return new SandboxSocialProvider();
  const { apiUrl, ...rest } = options;
  return new HttpSocialProvider({ apiUrl, ...rest });
}
