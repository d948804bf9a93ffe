import type { Config } from '../config/schema.ts';
import type { CreditPeriods } from '../credits/cycle.ts';
import type { MeteredOperations } from '../credits/metered.ts';
import type { Db } from '../db/knex.ts';
import type { JobQueue } from '../jobs/enqueue.ts';
import type { Logger } from './logger.ts';
import type { Providers } from './providers.ts';

/** What route handlers, services and job handlers are given: nothing global, all explicit. */
export interface Deps {
  config: Config;
  /** How credit periods (spending limits, /credits/cycle) are cut: billing cycles (built by src/credit-periods.ts). */
  creditPeriods: CreditPeriods;
  db: Db;
  jobs: JobQueue;
  log: Logger;
  /** The work billed through `meteredOperationJob`, by name (built by src/metered-operations.ts). */
  metered: MeteredOperations;
  providers: Providers;
}
