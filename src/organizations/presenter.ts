import type { z } from '../core/zod.ts';
import type { organizationSchema } from './schema.ts';
import { iso } from '../core/present.ts';

import type { OrganizationRow } from '../members/index.ts';

export type { OrganizationRow };

export function presentOrganization(row: OrganizationRow, role: string): z.input<typeof organizationSchema> {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    // The version query makes clients refetch when the logo changes.
    logo_url: row.logo_key ? `/organizations/${row.id}/logo?v=${row.logo_updated_at?.getTime() ?? 0}` : null,
    onboarded_at: iso(row.onboarded_at),
    role,
    created_by_id: row.created_by_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
