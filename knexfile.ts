// For the knex CLI (`npx knex migrate:status`); the application migrates through `npm run migrate`,
// which resolves the embedded database when DATABASE_URL is unset.
import type { Knex } from 'knex';

const config: Knex.Config = {
  client: 'pg',
  connection: process.env.DATABASE_URL,
  migrations: { directory: './migrations', extension: 'ts', loadExtensions: ['.ts'] },
};

export default config;
