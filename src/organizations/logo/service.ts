import { randomUUID } from 'node:crypto';
import { recordActivity } from '../../core/activity.ts';
import { notFound } from '../../core/errors.ts';
import type { Actor } from '../../access/index.ts';
import type { Deps } from '../../platform/deps.ts';
import type { OrganizationRow } from '../presenter.ts';
import { columns } from '../service.ts';
import type { LogoContentType } from './schema.ts';
import { inTransaction } from '../../db/transaction.ts';

type WithRole = { organization: OrganizationRow; role: string };

/**
 * Stores the new logo under a fresh key, then points the organization at it (row and activity in
 * one transaction). The previous object is deleted only after the commit, so a failed request
 * never leaves the organization pointing at missing or half-replaced bytes.
 */
export async function replaceLogo(deps: Deps, actor: Actor, organizationId: string, contentType: LogoContentType, bytes: Buffer): Promise<WithRole> {
  const key = `organizations/${organizationId}/logo/${randomUUID()}`;
  await deps.providers.storage.put(key, bytes, contentType);
  let previousKey: string | null = null;
  try {
    const result = await inTransaction(deps.db, async (trx) => {
      const membership = await actor.member(organizationId);
      const before = await trx('organizations').where({ id: organizationId }).forUpdate().first('logo_key');
      previousKey = before.logo_key as string | null;
      const [organization] = (await trx('organizations')
        .where({ id: organizationId })
        .update({ logo_key: key, logo_content_type: contentType, logo_updated_at: trx.fn.now(), updated_at: trx.fn.now() })
        .returning(columns)) as OrganizationRow[];
      await recordActivity(trx, {
        organizationId,
        actorId: actor.userId,
        action: 'organization.logo_updated',
        subjectType: 'organization',
        subjectId: organizationId,
        data: { content_type: contentType, size: bytes.length },
      });
      return { organization: organization!, role: membership.role };
    });
    if (previousKey) await deleteQuietly(deps, previousKey);
    return result;
  } catch (error) {
    await deleteQuietly(deps, key);
    throw error;
  }
}

/** Removes the logo. Idempotent: without a logo it answers the organization unchanged. */
export async function removeLogo(deps: Deps, actor: Actor, organizationId: string): Promise<WithRole> {
  let previousKey: string | null = null;
  const result = await inTransaction(deps.db, async (trx) => {
    const membership = await actor.member(organizationId);
    const before = (await trx('organizations').where({ id: organizationId }).forUpdate().first(columns)) as OrganizationRow;
    previousKey = before.logo_key;
    if (!previousKey) return { organization: before, role: membership.role };
    const [organization] = (await trx('organizations')
      .where({ id: organizationId })
      .update({ logo_key: null, logo_content_type: null, logo_updated_at: trx.fn.now(), updated_at: trx.fn.now() })
      .returning(columns)) as OrganizationRow[];
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'organization.logo_removed',
      subjectType: 'organization',
      subjectId: organizationId,
    });
    return { organization: organization!, role: membership.role };
  });
  if (previousKey) await deleteQuietly(deps, previousKey);
  return result;
}

/** The logo bytes for a member; 404 for non-members and organizations without a logo. */
export async function readLogo(deps: Deps, actor: Actor, organizationId: string): Promise<{ body: Buffer; contentType: string }> {
  await actor.member(organizationId);
  const row = await deps.db('organizations').where({ id: organizationId }).first('logo_key', 'logo_content_type');
  if (!row?.logo_key) throw notFound('logo');
  const stored = await deps.providers.storage.get(row.logo_key);
  if (!stored) throw notFound('logo');
  return { body: stored.body, contentType: row.logo_content_type ?? stored.contentType };
}

/** An orphaned object costs storage, not correctness: log it rather than fail the request. */
async function deleteQuietly(deps: Deps, key: string): Promise<void> {
  await deps.providers.storage.delete(key).catch((error: unknown) => deps.log.warn({ err: error, key }, 'could not delete a replaced logo object'));
}
