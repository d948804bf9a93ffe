import { expect } from 'chai';
import { createDb } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { release } from '../../src/app/release.ts';
import { testDatabase } from '../support/hooks.ts';
import { startTestServer } from '../support/server.ts';

describe('GET /readyz', () => {
  it('answers 503 with an Error body once the database is gone, while /healthz stays 200', async () => {
    // A web process of its own on a database of its own, which the test then drops under it.
    const url = await testDatabase().createDatabase('readyz');
    await release(url, createLogger({ LOG_LEVEL: 'silent' }, 'test'));
    const server = await startTestServer({}, { databaseUrl: url });
    try {
      expect((await server.request('get', '/readyz')).status).to.equal(200);

      const admin = createDb(testDatabase().url, { max: 1 });
      await admin.raw(`DROP DATABASE ${new URL(url).pathname.slice(1)} WITH (FORCE)`);
      await admin.destroy();

      const res = await server.request('get', '/readyz');
      expect(res.status).to.equal(503);
      expect(res.body).to.deep.equal({ code: 'unavailable', message: 'database unreachable', data: { issues: [] } });
      const health = await server.request('get', '/healthz');
      expect(health.status).to.equal(200);
    } finally {
      await server.stop();
    }
  });
});
