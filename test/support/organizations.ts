// Kept for the suites that import it: the implementations live in the one factories module.
export { addMember, createOrganization, organizationPairs, type OrganizationPair } from './factories.ts';
