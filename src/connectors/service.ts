import type { Knex } from 'knex';
import type { Actor } from '../access/index.ts';
import { recordActivity } from '../core/activity.ts';
import { badRequest, conflict, isAppError, notFound, unavailable } from '../core/errors.ts';
import { paginate, type Page, newestFirst } from '../core/pagination.ts';
import type { Deps, MemberRemoved } from '../platform/deps.ts';
import type { ConnectorRow, CredentialStatus } from './presenter.ts';
import type { authSchemes, connectorTypes } from './schema.ts';
import { last4Of, openSecret, resolveKeyring, sealSecret } from './secrets.ts';
import { checkConnectorUrl } from './url-policy.ts';
import { inTransaction } from '../db/transaction.ts';
import { revokeConnections } from './oauth/revocation.ts';

/** The organization permission that creates, changes and deletes connectors (owners and admins hold it). */
export const MANAGE_CONNECTORS = 'connectors.manage';

type ConnectorType = (typeof connectorTypes)[number];
type AuthScheme = (typeof authSchemes)[number];

export interface CreateConnectorInput {
  organization_id: string;
  type: ConnectorType;
  name: string;
  url?: string | null | undefined;
  auth_scheme?: AuthScheme | undefined;
  needs_approval?: boolean | undefined;
  approval_tools?: string[] | undefined;
}

export interface ConnectorChanges {
  type?: ConnectorType | undefined;
  name?: string | undefined;
  url?: string | null | undefined;
  auth_scheme?: AuthScheme | undefined;
  needs_approval?: boolean | undefined;
  approval_tools?: string[] | undefined;
}

const pageKeys = newestFirst('c');

/** OAuth is the MCP authorization spec's: only `mcp` connectors use it. */
function requireOAuthOnMcp(type: ConnectorType, scheme: AuthScheme | undefined): void {
  if ((scheme === 'oauth' || scheme === 'oauth_client_credentials') && type !== 'mcp')
    throw badRequest(`auth_scheme: ${scheme} is for mcp connectors only (this one is ${type})`, ['auth_scheme']);
}

export async function createConnector(deps: Pick<Deps, 'config' | 'db'>, actor: Actor, input: CreateConnectorInput): Promise<ConnectorRow> {
  await actor.within(input.organization_id, MANAGE_CONNECTORS);
  requireOAuthOnMcp(input.type, input.auth_scheme);
  const url = input.url == null ? null : await checkConnectorUrl(input.url, deps.config.OUTBOUND_ALLOWLIST);
  return inTransaction(deps.db, async (trx) => {
    await requireNameFree(trx, input.organization_id, input.name);
    const [row] = (await trx('connectors')
      .insert({
        organization_id: input.organization_id,
        type: input.type,
        name: input.name,
        url,
        auth_scheme: input.auth_scheme ?? 'none',
        needs_approval: input.needs_approval ?? false,
        approval_tools: JSON.stringify(input.approval_tools ?? []),
        created_by_id: actor.userId,
      })
      .returning('*')) as ConnectorRow[];
    await record(trx, actor, row!, 'connector.created', { name: row!.name, type: row!.type });
    return row!;
  });
}

/** The live connectors of an organization, newest first; an empty page to a non-member. */
export async function listConnectors(deps: Pick<Deps, 'db'>, actor: Actor, query: { organization_id: string; limit: number; cursor?: string | undefined }) {
  const viewer = await actor.viewer(query.organization_id);
  if (!viewer) return { items: [], next_cursor: null } satisfies Page<ConnectorRow>;
  const rows = deps.db('connectors as c').select('c.*').where('c.organization_id', query.organization_id).whereNull('c.deleted_at');
  return paginate<ConnectorRow>(rows, pageKeys, query);
}

/** One connector (a deleted one too, showing `deleted_at`): any member of its organization; 404 to everyone else. */
export async function getConnector(deps: Pick<Deps, 'db'>, actor: Actor, id: string): Promise<ConnectorRow> {
  const row = (await deps.db('connectors').where({ id }).first()) as ConnectorRow | undefined;
  return authorized(actor, row);
}

export async function updateConnector(deps: Pick<Deps, 'config' | 'db'>, actor: Actor, id: string, changes: ConnectorChanges): Promise<ConnectorRow> {
  // Decided before the URL is checked (a lookup may take a moment) and again on the locked row.
  await getConnector(deps, actor, id).then((row) => authorized(actor, row, MANAGE_CONNECTORS));
  const url = changes.url == null ? changes.url : await checkConnectorUrl(changes.url, deps.config.OUTBOUND_ALLOWLIST);
  return inTransaction(deps.db, async (trx) => {
    const before = await authorized(actor, await lockConnector(trx, id), MANAGE_CONNECTORS);
    if (before.deleted_at) throw conflict('the connector is deleted');
    requireOAuthOnMcp(changes.type ?? before.type, changes.auth_scheme ?? before.auth_scheme);
    if (changes.name !== undefined && changes.name.toLowerCase() !== before.name.toLowerCase())
      await requireNameFree(trx, before.organization_id, changes.name);
    const values = {
      ...(changes.type !== undefined && { type: changes.type }),
      ...(changes.name !== undefined && { name: changes.name }),
      ...(url !== undefined && { url }),
      ...(changes.auth_scheme !== undefined && { auth_scheme: changes.auth_scheme }),
      ...(changes.needs_approval !== undefined && { needs_approval: changes.needs_approval }),
      ...(changes.approval_tools !== undefined && { approval_tools: JSON.stringify(changes.approval_tools) }),
    };
    const [row] = (await trx('connectors')
      .where({ id })
      .update({ ...values, updated_at: trx.fn.now() })
      .returning('*')) as ConnectorRow[];
    await record(trx, actor, row!, 'connector.updated', { changes: values });
    return row!;
  });
}

/**
 * Soft delete: the row keeps `deleted_at`/`deleted_by_id`, lists hide it, and every user's
 * credential for it is erased in the same transaction (a secret nobody can use is not kept).
 * Deleting a deleted connector is a no-op.
 */
export async function deleteConnector(deps: Pick<Deps, 'db' | 'jobs'>, actor: Actor, id: string): Promise<void> {
  // The caller's membership is read here, before the transaction (which decides again on the locked row with it).
  await getConnector(deps, actor, id).then((row) => authorized(actor, row, MANAGE_CONNECTORS));
  await inTransaction(deps.db, async (trx) => {
    const row = await authorized(actor, await lockConnector(trx, id), MANAGE_CONNECTORS);
    if (row.deleted_at) return;
    await trx('connectors').where({ id }).update({ deleted_at: trx.fn.now(), deleted_by_id: actor.userId, updated_at: trx.fn.now() });
    const erased = await trx('connector_credentials').where({ connector_id: id }).delete();
    // OAuth connections are revoked at their server too (a job), pending authorizations dropped.
    const revoked = await revokeConnections(trx, deps.jobs, trx('connector_oauth_connections').where({ connector_id: id }));
    await trx('connector_oauth_authorizations').where({ connector_id: id }).delete();
    await record(trx, actor, row, 'connector.deleted', { name: row.name, credentials_erased: erased, connections_revoked: revoked.length });
  });
}

// ——— each user's own credentials ———

/** The caller's credential status for every live connector of the organization; an empty page to a non-member. */
export async function listCredentials(
  deps: Deps,
  actor: Actor,
  query: { organization_id: string; limit: number; cursor?: string | undefined },
): Promise<Page<CredentialStatus>> {
  const viewer = await actor.viewer(query.organization_id);
  if (!viewer) return { items: [], next_cursor: null };
  const rows = deps
    .db('connectors as c')
    .leftJoin('connector_credentials as cc', (join) => join.on('cc.connector_id', 'c.id').andOn('cc.user_id', deps.db.raw('?', [actor.userId])))
    .select('c.id as connector_id', 'cc.last4', 'cc.updated_at', deps.db.raw('(cc.connector_id IS NOT NULL) AS set'))
    .where('c.organization_id', query.organization_id)
    .whereNull('c.deleted_at');
  return paginate<CredentialStatus>(rows, pageKeys, query);
}

/** Sets or replaces the caller's secret for a connector they can read; the answer shows only its status. */
export async function setCredential(deps: Pick<Deps, 'config' | 'db'>, actor: Actor, connectorId: string, secret: string): Promise<CredentialStatus> {
  await getConnector(deps, actor, connectorId);
  const keyring = await resolveKeyring(deps.config);
  if (!keyring) throw unavailable('connector credentials cannot be stored: CONNECTOR_SECRET_KEYS is not configured');
  const sealed = sealSecret(keyring, secret, { connectorId, userId: actor.userId });
  return inTransaction(deps.db, async (trx) => {
    // Shared lock: a concurrent delete of the connector (which erases its credentials) waits for this, or this sees it deleted.
    const row = await authorized(actor, (await trx('connectors').where({ id: connectorId }).forShare().first()) as ConnectorRow | undefined);
    if (row.deleted_at) throw conflict('the connector is deleted');
    const [stored] = (await trx('connector_credentials')
      .insert({
        connector_id: connectorId,
        user_id: actor.userId,
        ciphertext: sealed.ciphertext,
        iv: sealed.iv,
        auth_tag: sealed.authTag,
        key_id: sealed.keyId,
        last4: last4Of(secret),
      })
      .onConflict(['connector_id', 'user_id'])
      .merge({
        ciphertext: sealed.ciphertext,
        iv: sealed.iv,
        auth_tag: sealed.authTag,
        key_id: sealed.keyId,
        last4: last4Of(secret),
        updated_at: trx.fn.now(),
      })
      .returning(['connector_id', 'last4', 'updated_at'])) as { connector_id: string; last4: string | null; updated_at: Date }[];
    await record(trx, actor, row, 'connector_credential.set', {});
    return { ...stored!, set: true };
  });
}

/** Removes the caller's secret for a connector they can read; removing one that is not set is a no-op. */
export async function deleteCredential(deps: Pick<Deps, 'db'>, actor: Actor, connectorId: string): Promise<void> {
  const row = await getConnector(deps, actor, connectorId);
  await inTransaction(deps.db, async (trx) => {
    const removed = await trx('connector_credentials').where({ connector_id: connectorId, user_id: actor.userId }).delete();
    if (removed) await record(trx, actor, row, 'connector_credential.removed', {});
  });
}

/**
 * `Deps.memberRemoved`: a member who leaves the organization keeps no secret for its connectors —
 * erased with their cached tool lists (a credential nobody in the organization may use is not
 * kept, and coming back does not bring it back).
 */
export async function eraseCredentialsOfRemovedMember(trx: Knex.Transaction, event: MemberRemoved): Promise<Record<string, number>> {
  const ofOrganization = trx('connectors').select('id').where({ organization_id: event.organizationId });
  const erased = await trx('connector_credentials').where({ user_id: event.userId }).whereIn('connector_id', ofOrganization).delete();
  await trx('connector_tool_lists').where({ user_id: event.userId }).whereIn('connector_id', ofOrganization).delete();
  return erased ? { connector_credentials_erased: erased } : {};
}

/**
 * A user's secret for a live connector, decrypted, or null when none is set: for the code that
 * calls the connector on the user's behalf. Never put it in a response or a log line.
 */
export async function connectorSecret(deps: Pick<Deps, 'config' | 'db'>, connectorId: string, userId: string): Promise<string | null> {
  const found = (await deps
    .db('connector_credentials as cc')
    .join('connectors as c', 'c.id', 'cc.connector_id')
    .whereNull('c.deleted_at')
    .where({ 'cc.connector_id': connectorId, 'cc.user_id': userId })
    .first('cc.ciphertext', 'cc.iv', 'cc.auth_tag', 'cc.key_id')) as { ciphertext: Buffer; iv: Buffer; auth_tag: Buffer; key_id: string } | undefined;
  if (!found) return null;
  const keyring = await resolveKeyring(deps.config);
  if (!keyring) throw unavailable('connector credentials cannot be read: CONNECTOR_SECRET_KEYS is not configured');
  return openSecret(keyring, { ciphertext: found.ciphertext, iv: found.iv, authTag: found.auth_tag, keyId: found.key_id }, { connectorId, userId });
}

// ——— helpers ———

/**
 * The connector, if the caller may act on it: a non-member of its organization gets 404, the same
 * answer as a missing id (ids cannot be probed); a member lacking `need` gets 403.
 */
async function authorized(actor: Actor, row: ConnectorRow | undefined, need?: typeof MANAGE_CONNECTORS): Promise<ConnectorRow> {
  if (!row) throw notFound('connector');
  await actor.member(row.organization_id, need).catch((error: unknown) => {
    throw isAppError(error, 'not_found') ? notFound('connector') : error;
  });
  return row;
}

const lockConnector = async (trx: Knex.Transaction, id: string) => (await trx('connectors').where({ id }).forUpdate().first()) as ConnectorRow | undefined;

async function requireNameFree(trx: Knex, organizationId: string, name: string): Promise<void> {
  const taken = await trx('connectors')
    .where({ organization_id: organizationId })
    .whereNull('deleted_at')
    .whereRaw('lower(name) = lower(?)', [name])
    .first('id');
  if (taken) throw conflict(`name: a connector named "${name}" already exists in this organization`, ['name']);
}

const record = (trx: Knex.Transaction, actor: Actor, row: ConnectorRow, action: string, data: Record<string, unknown>) =>
  recordActivity(trx, { organizationId: row.organization_id, actorId: actor.userId, action, subjectType: 'connector', subjectId: row.id, data });
