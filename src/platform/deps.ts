import type { Config } from '../config/schema.ts';
import type { Knex } from 'knex';
import type { Db } from '../db/knex.ts';
import type { JobQueue } from '../jobs/enqueue.ts';
import type { ReadOperation } from './read-operation.ts';
import type { Logger } from './logger.ts';
import type { Providers } from './providers.ts';

/** A period credits are counted in (spending limits, `/credits/cycle`). */
export interface CreditPeriod {
  start: Date;
  end: Date;
}

/**
 * How an organization's credit periods are cut. One is built into `Deps.creditPeriods` by each
 * composition root (web, worker), never installed by an import: a process follows billing cycles
 * because it was given `billingCyclePeriods`, not because some module happened to load billing.
 * (Declared here, with the other ports of Deps, so this module depends on no domain.)
 */
export interface CreditPeriods {
  current(db: Knex, organizationId: string, now?: Date): Promise<CreditPeriod>;
}

/** What creating an organization publishes to the domains that act on it (billing: the starter grant). */
export interface OrganizationCreated {
  organizationId: string;
  createdById: string;
}

/**
 * Told of a new organization inside the transaction that creates it, so what it writes commits or
 * rolls back with the organization: exactly once, never half. Built into `Deps.organizationCreated`
 * by the composition root; the organizations domain knows no listener by name.
 */
export type OrganizationCreatedListener = (trx: Knex.Transaction, event: OrganizationCreated) => Promise<void>;

/** A membership that ended (removed by an admin, or the member left). */
export interface MemberRemoved {
  organizationId: string;
  userId: string;
}

/**
 * Told of an ended membership inside the transaction that ends it, so what the member held in the
 * organization goes with it or not at all (access: their resource grants). Returns counts of what
 * it removed (`{ grants_removed: 2 }`), which the activity entry records. Built into
 * `Deps.memberRemoved` by the composition root; the members domain knows no listener by name.
 */
export type MemberRemovedListener = (trx: Knex.Transaction, event: MemberRemoved) => Promise<Record<string, number>>;

/** Every metered read (social operations, search, read-url) by name (built by src/app/read-operations.ts). */
export type ReadOperations = ReadonlyMap<string, ReadOperation>;

/** What route handlers, services and job handlers are given: nothing global, all explicit. */
export interface Deps {
  config: Config;
  /** How credit periods (spending limits, /credits/cycle) are cut: billing cycles (built by src/app/credit-periods.ts). */
  creditPeriods: CreditPeriods;
  db: Db;
  jobs: JobQueue;
  log: Logger;
  /** Listeners run in the creating transaction of every organization, in order (built by src/app/deps.ts). */
  organizationCreated: readonly OrganizationCreatedListener[];
  /** Listeners run in the transaction that ends a membership, in order (built by src/app/deps.ts). */
  memberRemoved: readonly MemberRemovedListener[];
  providers: Providers;
  /** Every metered read by name, for the metered-call job (built by src/app/read-operations.ts). */
  reads: ReadOperations;
}

/** The same deps with every statement on `trx`: what a service called inside a transaction is given, so it never waits for a second connection. */
export const onTransaction = <D extends { db: Db }>(deps: D, trx: Knex.Transaction): D => ({ ...deps, db: trx as unknown as Db });
