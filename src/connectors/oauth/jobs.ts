import { z } from '../../core/zod.ts';
import { defineJob, type PayloadOf } from '../../jobs/define.ts';

/**
 * Revokes a connection's tokens at its authorization server (RFC 7009, when it has a revocation
 * endpoint), then erases them here: after a member disconnected or left the organization. The
 * connection is unusable from the moment it was marked (status `revoked`); this only finishes it.
 */
export const connectionRevocationJob = defineJob({
  name: 'connectors.oauth-revoke',
  version: 1,
  nature: 'waits', // on the authorization server / the provider
  payload: z.object({ connection_id: z.string().uuid() }),
  searchable: ['connection_id'],
  policy: { retryLimit: 6, retryDelaySeconds: 10, retryBackoff: true, expireInSeconds: 60 },
  expectedSeconds: 10,
});
export type ConnectionRevocationPayload = PayloadOf<typeof connectionRevocationJob>;
