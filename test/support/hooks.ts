import { createTestDatabase, type TestDatabase } from './database.ts';

// Kept on globalThis: mocha may load this file as a root-hook module and tests import it again.
const state = globalThis as { __workspaceTestDatabase?: TestDatabase };

/** The run's database; available once the root `beforeAll` hook has run. */
export function testDatabase(): TestDatabase {
  if (!state.__workspaceTestDatabase) throw new Error('test database not started (is test/support/hooks.ts in .mocharc.json?)');
  return state.__workspaceTestDatabase;
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    state.__workspaceTestDatabase = await createTestDatabase();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await state.__workspaceTestDatabase?.dispose();
  },
};
