import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import pg from 'pg';

/**
 * The baseline every HTTP benchmark compares with: a bare Koa 3 app answering one `SELECT 1`
 * through a pg.Pool of our web process's size — the ceiling for any Koa + Postgres request.
 */
export async function startBareKoa(databaseUrl: string, poolSize = 20): Promise<{ url: string; stop(): Promise<void> }> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize });
  const app = new Koa();
  app.use(async (ctx) => {
    const { rows } = await pool.query('SELECT 1 AS one');
    ctx.body = rows[0];
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    async stop() {
      await new Promise((resolve) => server.close(resolve));
      await pool.end();
    },
  };
}
