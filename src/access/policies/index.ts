import { entryOf } from '../registry.ts';
import type { Capability, ResourceType, Role } from '../types.ts';

/**
 * Who may do what, per resource type: the one readable place authorization is declared.
 * A capability lists the roles that hold it; the caller's role is the highest of ownership,
 * a direct grant, general access and inherited access (see ../sql.ts).
 */
export type Policy = Record<Capability, readonly Role[]>;

const anyone: readonly Role[] = ['viewer', 'editor', 'owner'];
const editors: readonly Role[] = ['editor', 'owner'];
const owners: readonly Role[] = ['owner'];

/** CONVENTIONS §4: editors edit; only owners (creator, organization owners/admins) manage people, general access and deletion. */
export const defaultPolicy: Policy = {
  read: anyone,
  edit: editors,
  manage_people: owners,
  change_general_access: owners,
  delete: owners,
  restore: owners,
  // Archiving hides a project from everyone's default lists, so it is an owner's decision.
  archive: owners,
};

/** A type's policy: its declaration's (src/<domain>/resource.ts), else the default. */
export const policyOf = (type: ResourceType): Policy => entryOf(type)?.policy ?? defaultPolicy;

export const allows = (type: ResourceType, role: Role | null, capability: Capability): boolean => role !== null && policyOf(type)[capability].includes(role);

/** The capabilities object of the access record (spec 2.7). */
export function capabilitiesOf(type: ResourceType, role: Role | null) {
  return {
    can_edit: allows(type, role, 'edit'),
    can_manage_people: allows(type, role, 'manage_people'),
    can_change_general_access: allows(type, role, 'change_general_access'),
    can_delete: allows(type, role, 'delete'),
  };
}

/** Inherited roles never confer ownership: a project owner edits, but does not own, the items filed in it. */
export const inheritedCeiling: Record<'origin' | 'reference' | 'project', Role> = {
  project: 'editor',
  origin: 'editor',
  // Referencing an asset in a chat must not let the chat's editors edit the asset.
  reference: 'viewer',
};
