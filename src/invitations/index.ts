// The invitations domain's public module.
export { invitationSchema } from './schema.ts';
