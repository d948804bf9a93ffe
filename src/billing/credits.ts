// Billing moves credits only through the credits domain's internal API.
export { grantCredits } from '../credits/ledger.ts';
