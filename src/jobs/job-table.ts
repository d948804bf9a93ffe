// pg-boss's job table as `release` tunes it (autovacuum settings, the console's indexes): the SQL
// lives with every other statement on pg-boss's schema, in ./boss-sql/tables.ts.
export { indexJobTable, jobTableStorage, searchableIndexName, tuneJobTables } from './boss-sql/index.ts';
