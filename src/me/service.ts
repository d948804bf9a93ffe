import type { z } from '../core/zod.ts';
import type { Actor } from '../access/index.ts';
import { availableOf, readBalances } from '../credits/index.ts';
import { membershipsWithRolesOfUser, orderedPermissions, permissionsOfRole } from '../members/index.ts';
import type { Deps } from '../platform/deps.ts';
import type { meSchema } from './schema.ts';

/** How many organizations `GET /me` lists; `GET /organizations` pages through the rest. */
export const ME_ORGANIZATIONS = 100;

/** The caller, their organizations with role and permissions, and each balance they may see: three reads. */
export async function whoAmI(deps: Deps, actor: Actor): Promise<z.input<typeof meSchema>> {
  const user = (await deps.db('users').where({ id: actor.userId }).first('id', 'email', 'name', 'created_at')) as {
    id: string;
    email: string | null;
    name: string | null;
    created_at: Date;
  };
  const rows = (await membershipsWithRolesOfUser(deps.db, actor.userId)
    .orderBy([{ column: 'o.name' }, { column: 'o.id' }])
    .limit(ME_ORGANIZATIONS + 1)
    .select('o.id', 'o.name', 'o.slug', 'm.role', 'mr.permissions as custom_permissions')) as {
    id: string;
    name: string;
    slug: string;
    role: string;
    custom_permissions: string[] | null;
  }[];
  const listed = rows.slice(0, ME_ORGANIZATIONS).map((row) => ({ ...row, permissions: permissionsOfRole(row.role, row.custom_permissions) }));
  const balances = await readBalances(
    deps.db,
    listed.filter((row) => row.permissions.has('credits.view')).map((row) => row.id),
  );
  return {
    user: { id: user.id, email: user.email, name: user.name, operator: actor.operator, created_at: user.created_at.toISOString() },
    organizations: listed.map((row) => {
      const balance = row.permissions.has('credits.view') ? balances.get(row.id) : undefined;
      return {
        id: row.id,
        name: row.name,
        slug: row.slug,
        role: row.role,
        permissions: orderedPermissions(row.permissions),
        // available plus held, as GET /organizations/{id}/credits shows it; an organization never granted credits has 0.
        balance: row.permissions.has('credits.view') ? (balance ? availableOf(balance) + balance.held : 0) : null,
      };
    }),
    more_organizations: rows.length > ME_ORGANIZATIONS,
  };
}
