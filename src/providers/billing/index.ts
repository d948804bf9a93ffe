import type { Config } from '../../config/schema.ts';
import { SandboxBillingProvider } from './sandbox.ts';
import { StripeBillingProvider } from './stripe.ts';
import type { BillingProvider } from './types.ts';

export type { BillingProvider } from './types.ts';

/** Stripe when STRIPE_SECRET_KEY is set, otherwise the offline sandbox. */
export function createBillingProvider(config: Config): BillingProvider {
  const publicUrl = config.PUBLIC_URL ?? `http://localhost:${config.PORT}`;
  if (!config.STRIPE_SECRET_KEY) return new SandboxBillingProvider(publicUrl);
  return new StripeBillingProvider({
    secretKey: config.STRIPE_SECRET_KEY,
    webhookSecret: config.STRIPE_WEBHOOK_SECRET,
    apiBase: config.STRIPE_API_BASE,
    returnUrl: publicUrl,
  });
}
