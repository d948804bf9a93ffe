import { randomUUID } from 'node:crypto';
import { readImage, removeImage, replaceImage } from '../../core/stored-image.ts';
import type { Actor } from '../../access/index.ts';
import type { Deps } from '../../platform/deps.ts';
import type { OrganizationRow } from '../presenter.ts';
import { changeOrganization, columns } from '../service.ts';
import type { LogoContentType } from './schema.ts';
import { inTransaction } from '../../db/transaction.ts';

type WithRole = { organization: OrganizationRow; role: string };

/** Stores the new logo, then points the organization at it (row and activity in one transaction; see replaceImage). */
export async function replaceLogo(deps: Deps, actor: Actor, organizationId: string, contentType: LogoContentType, bytes: Buffer): Promise<WithRole> {
  const key = `organizations/${organizationId}/logo/${randomUUID()}`;
  return replaceImage(deps, { what: 'logo', key, bytes, contentType }, () =>
    inTransaction(deps.db, async (trx) => {
      const membership = await actor.member(organizationId);
      const before = await trx('organizations').where({ id: organizationId }).forUpdate().first('logo_key');
      const logo = { logo_key: key, logo_content_type: contentType, logo_updated_at: trx.fn.now() };
      const data = { content_type: contentType, size: bytes.length };
      const organization = await changeOrganization(trx, actor, organizationId, logo, { action: 'organization.logo_updated', data });
      return { result: { organization, role: membership.role }, replaced: before.logo_key as string | null };
    }),
  );
}

/** Removes the logo. Idempotent: without a logo it answers the organization unchanged. */
export async function removeLogo(deps: Deps, actor: Actor, organizationId: string): Promise<WithRole> {
  return removeImage(deps, 'logo', () =>
    inTransaction(deps.db, async (trx) => {
      const membership = await actor.member(organizationId);
      const before = (await trx('organizations').where({ id: organizationId }).forUpdate().first(columns)) as OrganizationRow;
      if (!before.logo_key) return { result: { organization: before, role: membership.role }, replaced: null };
      const noLogo = { logo_key: null, logo_content_type: null, logo_updated_at: trx.fn.now() };
      const organization = await changeOrganization(trx, actor, organizationId, noLogo, { action: 'organization.logo_removed' });
      return { result: { organization, role: membership.role }, replaced: before.logo_key };
    }),
  );
}

/** The logo bytes for a member; 404 for non-members and organizations without a logo. */
export async function readLogo(deps: Deps, actor: Actor, organizationId: string): Promise<{ body: Buffer; contentType: string }> {
  await actor.member(organizationId);
  const row = await deps.db('organizations').where({ id: organizationId }).first('logo_key', 'logo_content_type');
  return readImage(deps, 'logo', { key: row?.logo_key ?? null, contentType: row?.logo_content_type ?? null });
}
