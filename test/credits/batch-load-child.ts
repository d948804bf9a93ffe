/**
 * A process that places and captures credit holds on one organization as fast as it can, through
 * one pool (so they go in batches), until it is killed: test/credits/batch-kill.test.ts SIGKILLs it
 * mid-batch. Prints `pairs <n>` as it goes. Env: DATABASE_URL, ORGANIZATION_ID, USER_ID.
 */
import { createCreditPeriods } from '../../src/app/credit-periods.ts';
import { placeHold } from '../../src/credits/holds.ts';
import { captureHold } from '../../src/credits/hold-resolutions.ts';
import { createDb } from '../../src/db/knex.ts';

const db = createDb(process.env.DATABASE_URL!, { max: 4 });
const periods = createCreditPeriods();
const organizationId = process.env.ORGANIZATION_ID!;
const userId = process.env.USER_ID!;
let pairs = 0;
await Promise.all(
  Array.from({ length: 32 }, async () => {
    for (;;) {
      const hold = await placeHold(db, periods, { organizationId, userId, amount: 5, reason: 'kill loop' });
      await captureHold(db, hold, 3);
      if (++pairs % 50 === 0) console.log(`pairs ${pairs}`);
    }
  }),
);
