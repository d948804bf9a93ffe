import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { createDb } from '../../src/db/knex.ts';
import { BOSS_SCHEMA, createBoss } from '../../src/jobs/boss.ts';
import { BOSS_COLUMNS, UPGRADE_CHECKLIST, VERIFIED_PGBOSS } from '../../src/jobs/boss-sql/index.ts';
import { testDatabase } from '../support/hooks.ts';

/** What to do when a pin below no longer holds. */
const recheck = (what: string) =>
  `${what}. src/jobs/boss-sql/ reads and writes pg-boss's tables directly; before moving VERIFIED_PGBOSS (src/jobs/boss-sql/index.ts), re-check in node_modules/pg-boss/dist (plans.js, manager.js):\n${UPGRADE_CHECKLIST.map((item) => `  - ${item}`).join('\n')}\n`;

describe('pg-boss: the release src/jobs/boss-sql/ was verified against', () => {
  it('the installed package and the schema version in the database are the pinned ones', async () => {
    const installed = JSON.parse(readFileSync('node_modules/pg-boss/package.json', 'utf8')) as { version: string; pgboss: { schema: number } };
    const boss = createBoss(testDatabase().url, 'web');
    await boss.start();
    try {
      const found = { package: installed.version, schema: await boss.schemaVersion() };
      expect(
        found,
        recheck(`pg-boss is ${found.package} (schema ${found.schema}), not the verified ${VERIFIED_PGBOSS.package} (schema ${VERIFIED_PGBOSS.schema})`),
      ).to.deep.equal(VERIFIED_PGBOSS);
      // The package's own schema version is the one it installs: a release that migrates the schema moves both.
      expect(installed.pgboss.schema, recheck('the package installs another schema version than the pinned one')).to.equal(VERIFIED_PGBOSS.schema);
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
  });

  it('every column the module reads exists, and the job states keep their order', async () => {
    const db = createDb(testDatabase().url, { max: 1 });
    try {
      for (const [table, columns] of Object.entries(BOSS_COLUMNS)) {
        const present = (
          (await db('information_schema.columns').where({ table_schema: BOSS_SCHEMA, table_name: table }).select('column_name')) as { column_name: string }[]
        ).map((row) => row.column_name);
        const missing = columns.filter((column) => !present.includes(column));
        expect(missing, recheck(`${BOSS_SCHEMA}.${table} has no column ${missing.join(', ')}`)).to.deep.equal([]);
      }
      const { rows } = await db.raw(
        `SELECT e.enumlabel FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid JOIN pg_namespace n ON n.oid = t.typnamespace
          WHERE n.nspname = ? AND t.typname = 'job_state' ORDER BY e.enumsortorder`,
        [BOSS_SCHEMA],
      );
      const states = (rows as { enumlabel: string }[]).map((row) => row.enumlabel);
      expect(states, recheck('the job_state enum changed (queries compare states by order)')).to.deep.equal([
        'created',
        'retry',
        'active',
        'completed',
        'cancelled',
        'failed',
      ]);
    } finally {
      await db.destroy();
    }
  });
});
