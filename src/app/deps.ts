// Composition root of a process's dependencies: what web.ts and workers/main.ts (and tests standing
// in for them) hand to routes, services and job handlers. Nothing here is installed by an import.
import type { PgBoss } from 'pg-boss';
import type { Config } from '../config/schema.ts';
import { starterGrant } from '../billing/index.ts';
import { createCreditPeriods } from './credit-periods.ts';
import type { Db } from '../db/knex.ts';
import { JobQueue } from '../jobs/enqueue.ts';
import { allJobs } from './jobs.ts';
import type { Deps } from '../platform/deps.ts';
import type { Logger } from '../platform/logger.ts';
import { createProviders } from '../platform/providers.ts';
import { createReadOperations } from './read-operations.ts';
import { registerResourceTypes, revokeGrantsOfRemovedMember } from '../access/index.ts';
import { resourceTypes } from './resource-types.ts';
import { onEventRecorded } from '../core/events.ts';
import { fanOutEvent } from '../webhooks/index.ts';
import { endApprovalsOfRemovedMember } from '../conversations/index.ts';
import { eraseCredentialsOfRemovedMember, revokeConnectionsOfRemovedMember } from '../connectors/index.ts';

export function createDeps(config: Config, db: Db, boss: PgBoss, log: Logger): Deps {
  // Access, lists, the lifecycle and the feed read the resource types from here on (src/access/registry.ts).
  registerResourceTypes(resourceTypes);
  const providers = createProviders(config, db);
  const jobs = new JobQueue(boss, allJobs);
  // Every recorded event fans out to the organization's webhook endpoints in the recording
  // transaction (one delivery job each). Keyed: a process building its deps again replaces it.
  onEventRecorded('webhooks', (trx, event) => fanOutEvent(trx, event, { jobs }));
  return {
    config,
    creditPeriods: createCreditPeriods(),
    db,
    jobs,
    log,
    organizationCreated: [starterGrant(providers.billing, config.STARTER_CREDITS)],
    memberRemoved: [revokeGrantsOfRemovedMember, revokeConnectionsOfRemovedMember(jobs), eraseCredentialsOfRemovedMember, endApprovalsOfRemovedMember(jobs)],
    providers,
    reads: createReadOperations(),
  };
}
