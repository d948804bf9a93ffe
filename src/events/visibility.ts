// Which events a member may see: those about a resource only if they can read it now (the same
// access predicate as lists), those about the organization by the permission their type names.
import { readableReferenceSql, type Viewer } from '../access/index.ts';
import { eventTypeList, eventTypes } from '../core/events.ts';
import { readableGenerationSql } from '../generations/index.ts';
import type { Membership } from '../members/index.ts';

export interface Fragment {
  sql: string;
  bindings: unknown[];
}

const uuidPattern = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

/**
 * SQL boolean over the events row aliased `e`: may this member see it? A subject of an unknown
 * type is hidden (false), never shown by default. Generations are not a registered resource type
 * (they are read through what they were made for): their own predicate.
 */
export function visibleEventSql(viewer: Viewer, membership: Membership, alias = 'e'): Fragment {
  const organizationTypes = eventTypeList.filter((type) => {
    const need = eventTypes[type];
    return need !== 'resource' && membership.permissions.has(need);
  });
  const resource = readableReferenceSql(`${alias}.subject_type`, `${alias}.subject_id`, viewer, false);
  const generation = readableGenerationSql('eg', viewer);
  return {
    sql: `(CASE WHEN ${alias}.subject_type IS NULL THEN ${alias}.type = ANY(?::text[])
      WHEN ${alias}.subject_type = 'generation' THEN (${alias}.subject_id ~ '${uuidPattern}' AND COALESCE((SELECT ${generation.sql} FROM generations eg WHERE eg.id = (${alias}.subject_id)::uuid), false))
      ELSE ${resource.sql} END)`,
    bindings: [organizationTypes, ...generation.bindings, ...resource.bindings],
  };
}
