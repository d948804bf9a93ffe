export { read_url, search, searchOperation, searchOperations } from './operations.ts';
export { readUrlInput, readUrlOutput, searchInput, searchOutput } from './schema.ts';
