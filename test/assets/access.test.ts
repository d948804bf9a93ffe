import { expect } from 'chai';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

/** Who reaches an asset, and what they may do: outsider, member, granted viewer/editor, through a project. */
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
  const grant = async (type: string, id: string, user: TestUser, role: 'viewer' | 'editor') => {
    const res = await ctx.server.request('post', `/access/${type}/${id}/grants`, { token: alice.token, body: { user_id: user.id, role } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
  };
  /** Outcome of every operation for `user` on asset `id`: status codes by operation. */
  const outcomes = async (user: TestUser, id: string) => {
    const listed = await ctx.server.request('get', '/assets', { token: user.token, query: { organization_id: org, limit: 100 } });
    const read = await ctx.server.request('get', `/assets/${id}`, { token: user.token });
    const prompt = await ctx.server.request('post', `/assets/${id}/prompt`, { token: user.token, body: {} });
    const edit = await ctx.server.request('patch', `/assets/${id}`, { token: user.token, body: { title: 'Edited' } });
    const del = await ctx.server.request('delete', `/assets/${id}`, { token: user.token });
    const restore = await ctx.server.request('post', `/assets/${id}/restore`, { token: user.token });
    return {
      listed: listed.body.items.some((a: { id: string }) => a.id === id),
      read: read.status,
      prompt: prompt.status,
      edit: edit.status,
      delete: del.status,
      restore: restore.status,
    };
  };

  it('(a) a user outside the organization: 404 everywhere, empty lists, same body as a missing asset', async () => {
    const id = await asset({ visibility: 'workspace' });
    const outsider = newUser();
    expect(await outcomes(outsider, id)).to.deep.equal({ listed: false, read: 404, prompt: 404, edit: 404, delete: 404, restore: 404 });
    const missing = await ctx.server.request('get', '/assets/00000000-0000-4000-8000-000000000000', { token: outsider.token });
    expect((await ctx.server.request('get', `/assets/${id}`, { token: outsider.token })).body).to.deep.equal(missing.body);
  });

  it('(b) a member without a grant: a private asset does not exist for them; workspace general access lets them read but not edit', async () => {
    const id = await asset();
    const bob = await member();
    expect(await outcomes(bob, id)).to.deep.equal({ listed: false, read: 404, prompt: 404, edit: 404, delete: 404, restore: 404 });
    const opened = await ctx.server.request('patch', `/access/asset/${id}`, { token: alice.token, body: { visibility: 'workspace' } });
    expect(opened.status, JSON.stringify(opened.body)).to.equal(200);
    const result = await outcomes(bob, id);
    expect(result).to.deep.equal({ listed: true, read: 200, prompt: 200, edit: 403, delete: 403, restore: 403 });
    const denied = await ctx.server.request('patch', `/assets/${id}`, { token: bob.token, body: { title: 'x' } });
    expect(denied.body.code).to.equal('forbidden');
    expect(denied.body.message).to.match(/viewer/);
  });

  it('(c) a granted viewer reads and lists, but may not edit, delete or restore', async () => {
    const id = await asset();
    const bob = await member();
    await grant('asset', id, bob, 'viewer');
    expect(await outcomes(bob, id)).to.deep.equal({ listed: true, read: 200, prompt: 200, edit: 403, delete: 403, restore: 403 });
    expect((await ctx.db('assets').where({ id }).first('title')).title).to.equal('Shared?');
  });

  it('(d) a granted editor edits, but only owners delete and restore', async () => {
    const id = await asset();
    const bob = await member();
    await grant('asset', id, bob, 'editor');
    expect(await outcomes(bob, id)).to.deep.equal({ listed: true, read: 200, prompt: 200, edit: 200, delete: 403, restore: 403 });
    expect((await ctx.db('assets').where({ id }).first('title')).title).to.equal('Edited');
    expect((await ctx.db('activity_events').where({ subject_id: id, action: 'asset.updated' }).first('actor_id')).actor_id).to.equal(bob.id);
  });

  it('organization admins act as owners: they delete and restore assets of others', async () => {
    const id = await asset();
    const admin = await member('admin');
    expect(await outcomes(admin, id)).to.deep.equal({ listed: true, read: 200, prompt: 200, edit: 200, delete: 204, restore: 200 });
  });

  it('(e) through a project: the project audience reaches assets filed in it (viewer reads, editor edits), and lists filter by project', async () => {
    const project = await ctx.server.request('post', '/projects', { token: alice.token, body: { organization_id: org, title: `Launch ${Date.now()}` } });
    expect(project.status, JSON.stringify(project.body)).to.equal(201);
    const projectId = (project.body.project ?? project.body).id as string;
    const id = await asset({ project_id: projectId });
    const outside = await asset();
    const bob = await member();
    expect((await ctx.server.request('get', `/assets/${id}`, { token: bob.token })).status).to.equal(404);

    await grant('project', projectId, bob, 'viewer');
    expect(await outcomes(bob, id)).to.deep.equal({ listed: true, read: 200, prompt: 200, edit: 403, delete: 403, restore: 403 });
    expect((await ctx.server.request('get', `/assets/${outside}`, { token: bob.token })).status).to.equal(404);
    const filtered = await ctx.server.request('get', '/assets', { token: bob.token, query: { organization_id: org, project_id: projectId } });
    expect(filtered.body.items.map((a: { id: string }) => a.id)).to.deep.equal([id]);
    const projects = await ctx.server.request('get', `/assets/${id}/projects`, { token: bob.token });
    expect(projects.status).to.equal(200);
    expect(projects.body.items.map((p: { id: string }) => p.id)).to.deep.equal([projectId]);
    expect(projects.body.next_cursor).to.equal(null);

    const grantRow = await ctx.db('resource_grants').where({ resource_type: 'project', resource_id: projectId, user_id: bob.id }).first('id');
    const promoted = await ctx.server.request('patch', `/access/project/${projectId}/grants/${grantRow.id}`, { token: alice.token, body: { role: 'editor' } });
    expect(promoted.status, JSON.stringify(promoted.body)).to.equal(200);
    expect((await ctx.server.request('patch', `/assets/${id}`, { token: bob.token, body: { title: 'Via project' } })).status).to.equal(200);
    expect((await ctx.server.request('delete', `/assets/${id}`, { token: bob.token })).status).to.equal(403);
  });

  it('filing into a project needs a project the caller can edit (400 on project_id), and writes nothing', async () => {
    const project = await ctx.server.request('post', '/projects', { token: alice.token, body: { organization_id: org, title: `Private ${Date.now()}` } });
    const projectId = (project.body.project ?? project.body).id as string;
    const bob = await member();
    const before = await ctx.db('assets').where({ organization_id: org, created_by_id: bob.id }).count<{ count: number }[]>('* as count');
    const res = await ctx.server.request('post', '/assets', { token: bob.token, body: { organization_id: org, type: 'image', project_id: projectId } });
    expect(res.status).to.equal(400);
    expect(res.body.data.issues[0].path).to.deep.equal(['project_id']);
    const linkRes = await ctx.server.request('post', '/assets/imports/link', { token: bob.token, body: { organization_id: org, url: 'https://media.example.test/a.png', project_id: projectId } });
    expect(linkRes.status).to.equal(400);
    expect(await ctx.db('assets').where({ organization_id: org, created_by_id: bob.id }).count<{ count: number }[]>('* as count')).to.deep.equal(before);
  });
});
