import { expect } from 'chai';
import type { Knex } from 'knex';
import { tuneAndIndexJobTable } from '../../src/app/release.ts';
import { createDb } from '../../src/db/knex.ts';
import { BOSS_SCHEMA } from '../../src/jobs/boss.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/hooks.ts';

// The console's indexes on pg-boss's job table are built without holding writes (per partition,
// CONCURRENTLY, then attached) and come back at the next release after pg-boss dropped them.

interface IndexState {
  valid: boolean;
  partitions: number;
  attached: number;
}

describe('operator console: its job-table indexes are rebuilt without blocking writes', function () {
  this.timeout(120_000);
  let url: string;
  let db: Knex;
  const log = createLogger(testConfig(), 'test');

  before(async () => {
    url = await testDatabase().createMigratedDatabase('console_indexes');
    db = createDb(url, { max: 2 });
  });
  after(async () => {
    await db?.destroy();
  });

  /** The parent index `name`: valid, and how many of `job`'s partitions have theirs attached. */
  async function stateOf(name: string): Promise<IndexState | null> {
    const { rows } = await db.raw(
      `SELECT x.indisvalid AS valid,
              (SELECT count(*)::int FROM pg_inherits WHERE inhparent = ?::regclass) AS partitions,
              (SELECT count(*)::int FROM pg_inherits WHERE inhparent = c.oid) AS attached
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_index x ON x.indexrelid = c.oid
        WHERE n.nspname = ? AND c.relname = ?`,
      [`${BOSS_SCHEMA}.job`, BOSS_SCHEMA, name],
    );
    return (rows[0] as IndexState | undefined) ?? null;
  }

  it('release left every console index valid and attached on every partition', async () => {
    for (const name of ['job_ops_created_i', 'job_ops_open_i', 'job_ops_request_i', 'job_ops_payload_asset_id_i']) {
      const state = await stateOf(name);
      expect(state, name).to.not.equal(null);
      expect(state!.valid, name).to.equal(true);
      expect(state!.partitions).to.be.at.least(1);
      expect(state!.attached, name).to.equal(state!.partitions);
    }
  });

  it('an index dropped (pg-boss rebuilt its table) and one a crashed build left invalid are both back after the next run', async () => {
    await db.raw(`DROP INDEX ${BOSS_SCHEMA}.job_ops_request_i`);
    // An interrupted CONCURRENTLY build: the parent declared, one partition's index present but invalid and unattached.
    await db.raw(`DROP INDEX ${BOSS_SCHEMA}.job_ops_active_i`);
    await db.raw(`CREATE INDEX job_ops_active_i ON ONLY ${BOSS_SCHEMA}.job (name) WHERE state = 'active'`);
    const { rows } = await db.raw(`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = ?::regclass LIMIT 1`, [
      `${BOSS_SCHEMA}.job`,
    ]);
    const partition = (rows[0] as { relname: string }).relname;
    const child = `job_ops_active_i_${partition.replace(/^job_?/, '').slice(0, 20) || 'p'}`;
    await db.raw(`CREATE INDEX ${child} ON ${BOSS_SCHEMA}.${partition} (name) WHERE state = 'active'`);
    await db.raw(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = ?::regclass`, [`${BOSS_SCHEMA}.${child}`]).catch(() => undefined);
    expect(await stateOf('job_ops_request_i')).to.equal(null);
    expect((await stateOf('job_ops_active_i'))!.valid).to.equal(false);

    expect(await tuneAndIndexJobTable(url, log, 'test-worker')).to.equal(true);

    for (const name of ['job_ops_request_i', 'job_ops_active_i']) {
      const state = (await stateOf(name))!;
      expect(state.valid, name).to.equal(true);
      expect(state.attached, name).to.equal(state.partitions);
    }
  });

  it('a release running while another builds skips the work (one advisory lock), and the holder finishes it', async () => {
    const holder = createDb(url, { max: 1 });
    try {
      await holder.raw(`SELECT pg_advisory_lock(hashtext('workspace.job-table-indexes'))`);
      expect(await tuneAndIndexJobTable(url, log, 'test-worker')).to.equal(false);
    } finally {
      await holder.destroy();
    }
    expect(await tuneAndIndexJobTable(url, log, 'test-worker')).to.equal(true);
  });
});
