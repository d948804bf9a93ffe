import type { TestServer, TestUser } from '../support/server.ts';
import { newUser } from '../support/server.ts';

export { createOrganization } from '../support/organizations.ts';

export async function invite(server: TestServer, organizationId: string, inviter: TestUser, email: string, role = 'member') {
  return server.request('post', `/organizations/${organizationId}/invitations`, { token: inviter.token, body: { email, role } });
}

/** A new user who joined `organizationId` with `role` through an accepted invitation. */
export async function joinedMember(server: TestServer, organizationId: string, owner: TestUser, role = 'member'): Promise<TestUser> {
  const user = newUser();
  const invited = await invite(server, organizationId, owner, user.email, role);
  if (invited.status !== 201) throw new Error(`invite: ${invited.status} ${JSON.stringify(invited.body)}`);
  const accepted = await server.request('patch', `/organizations/${organizationId}/invitations/${invited.body.invitation.id}`, {
    token: user.token,
    body: { status: 'accepted' },
  });
  if (accepted.status !== 200) throw new Error(`accept: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  return user;
}
