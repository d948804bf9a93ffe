import { expect } from 'chai';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

/**
 * Asset-specific access. Who may read, list, edit, share, delete and restore an asset in each
 * position (outsider, member, granted or workspace viewer/editor, through a project, organization
 * admin) — including `POST /assets/{id}/prompt` and `GET /assets/{id}/projects` — is the matrix in
 * test/access/access-matrix.test.ts, shared by every resource type.
 */
describe('assets: access control', () => {
  const ctx = useServer();
  let alice: TestUser;
  let org: string;

  before(async () => {
    alice = newUser();
    org = await createOrganization(ctx.server, alice);
  });

  const asset = async (body: Record<string, unknown> = {}) => {
    const res = await ctx.server.request('post', '/assets', { token: alice.token, body: { organization_id: org, type: 'image', title: 'Shared?', ...body } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.id as string;
  };
  const member = async (role = 'member') => {
    const user = newUser();
    await addMember(ctx.db, org, user, role);
    return user;
  };
  const project = async (title: string) => {
    const res = await ctx.server.request('post', '/projects', { token: alice.token, body: { organization_id: org, title: `${title} ${Date.now()}` } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return (res.body.project ?? res.body).id as string;
  };

  it('a project grant reaches only the assets filed in the project; promoting it to editor lets B edit them, never delete them', async () => {
    const projectId = await project('Launch');
    const id = await asset({ project_id: projectId });
    const outside = await asset();
    const bob = await member();
    const granted = await ctx.server.request('post', `/access/project/${projectId}/grants`, { token: alice.token, body: { user_id: bob.id, role: 'viewer' } });
    expect(granted.status, JSON.stringify(granted.body)).to.equal(201);
    expect((await ctx.server.request('get', `/assets/${id}`, { token: bob.token })).status).to.equal(200);
    expect((await ctx.server.request('get', `/assets/${outside}`, { token: bob.token })).status).to.equal(404);
    expect((await ctx.server.request('patch', `/assets/${id}`, { token: bob.token, body: { title: 'Via project' } })).status).to.equal(403);

    const promoted = await ctx.server.request('patch', `/access/project/${projectId}/grants/${granted.body.id}`, {
      token: alice.token,
      body: { role: 'editor' },
    });
    expect(promoted.status, JSON.stringify(promoted.body)).to.equal(200);
    expect((await ctx.server.request('patch', `/assets/${id}`, { token: bob.token, body: { title: 'Via project' } })).status).to.equal(200);
    expect((await ctx.server.request('delete', `/assets/${id}`, { token: bob.token })).status).to.equal(403);
    expect((await ctx.server.request('patch', `/assets/${outside}`, { token: bob.token, body: { title: 'x' } })).status).to.equal(404);
  });

  it('filing into a project needs a project the caller can edit (400 on project_id), and writes nothing', async () => {
    const projectId = await project('Private');
    const bob = await member();
    const before = await ctx.db('assets').where({ organization_id: org, created_by_id: bob.id }).count<{ count: number }[]>('* as count');
    const res = await ctx.server.request('post', '/assets', { token: bob.token, body: { organization_id: org, type: 'image', project_id: projectId } });
    expect(res.status).to.equal(400);
    expect(res.body.data.issues[0].path).to.deep.equal(['project_id']);
    const linkRes = await ctx.server.request('post', '/assets/imports/link', {
      token: bob.token,
      body: { organization_id: org, url: 'https://media.example.test/a.png', project_id: projectId },
    });
    expect(linkRes.status).to.equal(400);
    expect(await ctx.db('assets').where({ organization_id: org, created_by_id: bob.id }).count<{ count: number }[]>('* as count')).to.deep.equal(before);
  });
});
