// Worker side of connectionRevocationJob (loaded by its binding in src/app/jobs.ts).
import type { OAuthClientInformationMixed } from '@modelcontextprotocol/sdk/shared/auth.js';
import { type JobContext, nothingToDo } from '../../jobs/define.ts';
import type { Deps } from '../../platform/deps.ts';
import { clientInformationById } from './client.ts';
import { type ConnectionRow, openAccessToken, openRefreshToken } from './connections.ts';
import { oauthFetch } from './discovery.ts';
import type { ConnectionRevocationPayload } from './jobs.ts';
import { oauthKeyring } from './sealed.ts';

export async function revokeConnection({ connection_id }: ConnectionRevocationPayload, { deps, log, step, lastAttempt }: JobContext) {
  const row = (await deps.db('connector_oauth_connections').where({ id: connection_id }).first()) as ConnectionRow | undefined;
  if (!row?.revoke_pending) return nothingToDo('the connection has nothing left to revoke');
  let failure: string | null = null;
  try {
    await revokeAtServer(deps, row);
  } catch (error) {
    // Retried; on the last attempt the tokens are erased anyway (they expire at the server on their own).
    if (!lastAttempt) throw error;
    failure = `the authorization server did not revoke the tokens: ${(error as Error).message}`;
    log.warn({ err: error, connection_id }, 'connector OAuth revocation failed; tokens erased here anyway');
  }
  await step((trx) =>
    trx('connector_oauth_connections')
      .where({ id: connection_id, revoke_pending: true, token_generation: row.token_generation })
      .update({ access_token: null, refresh_token: null, key_id: null, revoke_pending: false, last_error: failure, updated_at: trx.fn.now() }),
  );
}

/** RFC 7009: the refresh token first (a server revokes its grant with it), then the access token. */
async function revokeAtServer(deps: Pick<Deps, 'config' | 'db'>, row: ConnectionRow): Promise<void> {
  const endpoint = row.server_metadata.revocation_endpoint;
  if (!endpoint || !row.access_token) return;
  const keyring = await oauthKeyring(deps);
  const client = await clientInformationById(deps, row.connector_id, row.client_id);
  if (!client) return;
  const tokens: [string, string][] = [];
  const refresh = openRefreshToken(keyring, row);
  if (refresh) tokens.push([refresh, 'refresh_token']);
  tokens.push([openAccessToken(keyring, row), 'access_token']);
  const { fetch, close } = oauthFetch(deps);
  try {
    for (const [token, hint] of tokens) {
      const body = new URLSearchParams({ token, token_type_hint: hint });
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
      authenticate(client, row.server_metadata.revocation_endpoint_auth_methods_supported, headers, body);
      const response = await fetch(endpoint, { method: 'POST', headers, body: body.toString() });
      await response.body?.cancel().catch(() => undefined);
      // 200 is revoked (or already invalid); 503 asks to retry; anything else will not change.
      if (response.status >= 500) throw new Error(`${endpoint} answered ${response.status}`);
    }
  } finally {
    await close();
  }
}

function authenticate(client: OAuthClientInformationMixed, supported: string[] | undefined, headers: Record<string, string>, body: URLSearchParams): void {
  const secret = client.client_secret;
  if (secret && (!supported || supported.includes('client_secret_basic'))) {
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    return;
  }
  body.set('client_id', client.client_id);
  if (secret) body.set('client_secret', secret);
}
