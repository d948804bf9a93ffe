// The social domain's public module: the catalog of social reads (spec §4.4). Routes are mounted by src/app/routes.ts from ./routes.ts.
export { socialOperation, socialOperations } from './catalog/index.ts';
