// pg-boss's job table as `release` tunes it (autovacuum settings, the console's indexes, the claim's mark): the SQL
// lives with every other statement on pg-boss's schema, in ./boss-sql/tables.ts.
export { indexJobTable, installClaimMarks, jobTableStorage, searchableIndexName, tuneJobTables } from './boss-sql/index.ts';
