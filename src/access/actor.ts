import type { Knex } from 'knex';
import type { Caller } from '../core/caller.ts';
import { forbidden, notFound } from '../core/errors.ts';
import { queryPrepared } from '../db/prepared.ts';
import {
  findMembership,
  lockMembership,
  memberJoinSql,
  permissionsOfRole,
  requirePermission,
  roleHoldsSql,
  type Membership,
  type PermissionNeed,
} from '../members/index.ts';
import { allows, policyOf } from './policies/index.ts';
import { entryOf, nounOf, type ResourceTypeDeclaration as ResourceEntry } from './registry.ts';
import { memberRankSql } from './sql.ts';
import { roleOfRank, type Capability, type ResourceRow, type ResourceType, type Role, type Viewer } from './types.ts';

export interface Access<Row = ResourceRow> {
  row: Row;
  role: Role;
  viewer: Viewer;
  entry: ResourceEntry;
}

/**
 * Who is acting — a request's authenticated caller, or a job acting for a user — and the one
 * authorization path of the service. Memberships are read once per organization and remembered
 * for the life of the actor (one request or one job), so gates may be asked again for free.
 *
 *   member(org, need?)     an organization named by id in the path: 404 outside it, 403 lacking `need`
 *   within(org, need?)     a collection-level operation naming the organization in its body or
 *                          query: 403 outside it (the same for one that does not exist), 403 lacking `need`
 *   viewer(org)            lists: the caller as a reader of the organization's resources, or null (empty page)
 *   resource(db, type, id, capability, { forUpdate })
 *                          one resource by id, loaded and decided in one SQL round trip: 404 when it
 *                          does not exist or cannot be read (same body), 403 when readable without `capability`
 */
export type { PermissionNeed };

export class Actor implements Caller {
  private readonly memberships = new Map<string, Promise<Membership | null>>();
  /** Resources read outside a transaction, by `type:id`: the route's gate and the service share one read. */
  private readonly reads = new Map<string, Promise<Access>>();

  readonly caller: Caller;
  private readonly db: Knex;
  constructor(caller: Caller, db: Knex) {
    this.caller = caller;
    this.db = db;
  }

  get userId(): string {
    return this.caller.userId;
  }
  /** An operator of the service (src/auth/operator.ts). */
  get operator(): boolean {
    return this.caller.operator === true;
  }
  get email(): string | null {
    return this.caller.email;
  }
  get name(): string | null {
    return this.caller.name;
  }

  /**
   * The caller's membership of a live organization, or null; read once per organization. With
   * `{ fresh: trx }` it is read again inside that transaction, locked (see `member`).
   */
  membership(organizationId: string, options: { fresh?: Knex.Transaction; lockOrganization?: boolean } = {}): Promise<Membership | null> {
    if (options.fresh) return this.reread(options.fresh, organizationId, options.lockOrganization);
    let found = this.memberships.get(organizationId);
    if (!found) {
      found = findMembership(this.db, organizationId, this.userId);
      this.memberships.set(organizationId, found);
    }
    return found;
  }

  /**
   * The organization is named by id (its own path): to a non-member it does not exist. Inside a
   * transaction that must decide on the current role (a role change may race it), pass
   * `{ fresh: trx }`: the membership is read again there with the members domain's lock
   * (lockMembership: the member row share-locked until the transaction ends; `lockOrganization`
   * also locks the organization row for an update of it).
   */
  async member(organizationId: string, need?: PermissionNeed, options: { fresh?: Knex.Transaction; lockOrganization?: boolean } = {}): Promise<Membership> {
    const membership = await this.membership(organizationId, options);
    if (!membership) throw notFound('organization');
    return requirePermission(membership, need);
  }

  /** A create or query naming the organization in its body: never 404 (spec §4.1), so nothing can be probed. */
  async within(organizationId: string, need?: PermissionNeed): Promise<Membership> {
    const membership = await this.membership(organizationId);
    if (!membership) throw forbidden(`you are not a member of organization "${organizationId}"`);
    return requirePermission(membership, need);
  }

  private async reread(trx: Knex.Transaction, organizationId: string, lockOrganization = false): Promise<Membership | null> {
    const membership = await lockMembership(trx, organizationId, this.userId, { lockOrganization });
    this.memberships.set(organizationId, Promise.resolve(membership));
    return membership;
  }

  /** The caller as a reader of an organization's resources, or null when not a member (lists answer an empty page). */
  async viewer(organizationId: string): Promise<Viewer | null> {
    const membership = await this.membership(organizationId);
    return membership && viewerOf(membership);
  }

  /**
   * One resource the caller may act on, with their role, in one SQL round trip (row, membership
   * and role together). With `forUpdate` (pass the transaction as `db`) the row is locked, so the
   * decision and the change see the same state. Soft-deleted rows are returned too.
   */
  async resource<Row = ResourceRow>(
    db: Knex,
    type: ResourceType,
    id: string,
    capability: Capability = 'read',
    options: { forUpdate?: boolean } = {},
  ): Promise<Access<Row>> {
    const key = `${type}:${id}`;
    if (db.isTransaction || options.forUpdate) {
      // A transaction is about to change it: a later read outside must see the change, not the memo.
      this.reads.delete(key);
      return this.decide<Row>(await this.load(db, type, id, options.forUpdate ?? false), capability);
    }
    let read = this.reads.get(key);
    if (!read) {
      read = this.load(db, type, id, false);
      this.reads.set(key, read);
    }
    return this.decide<Row>(await read, capability);
  }

  private decide<Row>(access: Access, capability: Capability): Access<Row> {
    const { entry, role } = access;
    if (!allows(entry.type, role, capability))
      throw forbidden(`your role on this ${nounOf(entry.type)} is "${role}"; ${capability.replaceAll('_', ' ')} needs ${needed(entry.type, capability)}`);
    return access as Access<Row>;
  }

  /** The row and the caller's role in one round trip; 404 when missing or unreadable. */
  private async load(db: Knex, type: ResourceType, id: string, forUpdate: boolean): Promise<Access> {
    const entry = entryOf(type);
    const noun = nounOf(type);
    if (!entry) throw notFound(noun);
    const statement = resourceReadStatement(type, entry.table, forUpdate);
    // Planning this statement costs far more than running it (≈ 12 ms against 0.5 ms), so it is a
    // prepared statement, planned once per connection, type and lock — in a transaction too (every
    // change checks access there: a scheduled run's start did it 3 times).
    const rows = await queryPrepared<Record<string, unknown>>(db, `resource-read:${type}${forUpdate ? ':update' : ''}`, statement.prepared, [this.userId, id]);
    const found = rows[0] as (Record<string, unknown> & { __member_role: string; __member_permissions: string[] | null; __rank: number }) | undefined;
    const role = roleOfRank(Number(found?.__rank ?? 0));
    if (!found || !role) throw notFound(noun);
    const { __member_role, __member_permissions, __rank, ...row } = found;
    const membership: Membership = {
      organizationId: row.organization_id as string,
      userId: this.userId,
      role: __member_role,
      permissions: permissionsOfRole(__member_role, __member_permissions),
    };
    this.memberships.set(membership.organizationId, Promise.resolve(membership));
    return { row: row as ResourceRow, role, viewer: viewerOf(membership), entry };
  }
}

/** An actor for work done on a user's behalf outside a request (a job), or in tests. */
export const actorFor = (db: Knex, caller: Caller | { userId: string }) =>
  new Actor({ userId: caller.userId, email: 'email' in caller ? caller.email : null, name: 'name' in caller ? caller.name : null }, db);

interface ResourceReadStatement {
  /** A prepared statement: `$1` the caller's id wherever it is needed, `$2` the resource id. */
  prepared: string;
}

const resourceReads = new Map<string, ResourceReadStatement>();

/** The one-round-trip read of a resource with the caller's membership and role, built once per type. */
function resourceReadStatement(type: ResourceType, table: string, forUpdate: boolean): ResourceReadStatement {
  const key = `${type}:${forUpdate}`;
  let statement = resourceReads.get(key);
  if (!statement) {
    // Every binding of the rank expression is the caller's id (see ./sql.ts).
    const rank = memberRankSql(type, 't', '');
    const sql = `SELECT t.*, m.role AS "__member_role", mr.permissions AS "__member_permissions",
              CASE WHEN ${roleHoldsSql('resources.administer')} THEN 3 ELSE ${rank.sql} END AS "__rank"
         FROM ${table} t ${memberJoinSql('t.organization_id')}
        WHERE t.id = ?${forUpdate ? ' FOR UPDATE OF t' : ''}`;
    const userBindings = rank.bindings.length + 1;
    let seen = 0;
    const prepared = sql.replace(/\?/g, () => (++seen <= userBindings ? '$1' : '$2'));
    statement = { prepared };
    resourceReads.set(key, statement);
  }
  return statement;
}

function viewerOf(membership: Membership): Viewer {
  return { userId: membership.userId, organizationId: membership.organizationId, administers: membership.permissions.has('resources.administer') };
}

function needed(type: ResourceType, capability: Capability): string {
  const allowed = policyOf(type)[capability];
  return `the role ${allowed.map((r) => `"${r}"`).join(' or ')}${allowed.includes('owner') ? ' (organization owners and admins act as owners)' : ''}`;
}
