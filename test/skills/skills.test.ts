import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { insertProject } from '../access/fixtures.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { skillFields } from '../support/shapes.ts';

const orgSkillKeys = [
  'author',
  'body',
  'created_at',
  'created_by_id',
  'deleted_at',
  'deleted_by_id',
  'description',
  'files',
  'id',
  'mod_shortcut_id',
  'name',
  'organization_id',
  'project_scoped',
  'source',
  'updated_at',
];
const versionKeys = ['body', 'created_at', 'created_by_id', 'current', 'description', 'files', 'id', 'name', 'restored_from_version', 'skill_id', 'version'];

describe('custom skills', () => {
  const ctx = useServer({}, { pool: 4 });

  async function create(user: TestUser, body: Record<string, unknown>) {
    const res = await ctx.server.request('post', '/skills', { token: user.token, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.skill;
  }

  it('POST /skills returns {skill} with every field of spec 2.5, version 1 and an activity entry', async () => {
    const alice = newUser();
    const org = await createOrganization(ctx.server, alice);
    const files = [{ path: 'a.md', content: 'A' }];
    const res = await ctx.server.request('post', '/skills', {
      token: alice.token,
      body: { organization_id: org, name: 'Summarise', description: 'Short summaries', body: 'Summarise the text.', files },
    });
    expect(res.status).to.equal(201);
    expect(Object.keys(res.body)).to.deep.equal(['skill']);
    const { id, created_at, updated_at, ...rest } = res.body.skill;
    expect(Object.keys(res.body.skill).sort()).to.deep.equal(skillFields);
    expect(updated_at).to.equal(created_at);
    expect(rest).to.deep.equal({
      codename: null,
      organization_id: org,
      source: 'custom',
      name: 'Summarise',
      description: 'Short summaries',
      body: 'Summarise the text.',
      files,
      author: null,
      project_scoped: false,
      visibility: 'private',
      workspace_role: 'viewer',
      created_by_id: alice.id,
      mod_shortcut_id: null,
      listing_id: null,
      listing_version: null,
      listing_edited_at: null,
      deleted_at: null,
      deleted_by_id: null,
    });
    expect(await ctx.db('skill_versions').where({ skill_id: id }).select('version', 'name', 'created_by_id')).to.deep.equal([
      { version: 1, name: 'Summarise', created_by_id: alice.id },
    ]);
    expect(await ctx.db('activity_events').where({ subject_id: id }).pluck('action')).to.deep.equal(['skill.created']);
    const got = await ctx.server.request('get', `/skills/${id}`, { token: alice.token });
    expect(got.body).to.deep.equal(res.body);
  });

  it('POST /skills with project_id is project_scoped and filed in the project', async () => {
    const alice = newUser();
    const org = await createOrganization(ctx.server, alice);
    const project = await insertProject(ctx.db, org, alice);
    const skill = await create(alice, { organization_id: org, name: 'In project', description: '', body: 'b', project_id: project });
    expect(skill.project_scoped).to.equal(true);
    expect(skill.files).to.equal(null);
    const projects = await ctx.server.request('get', `/skills/${skill.id}/projects`, { token: alice.token });
    expect(projects.status).to.equal(200);
    expect(projects.body.items.map((p: any) => p.id)).to.deep.equal([project]);
  });

  it('POST /organizations/{id}/skills: 201 organization-scoped shape, 400, 403, 404, 409', async () => {
    const alice = newUser();
    const org = await createOrganization(ctx.server, alice);
    const res = await ctx.server.request('post', `/organizations/${org}/skills`, {
      token: alice.token,
      body: { name: 'Tone', description: 'Brand tone', body: 'Be kind.' },
    });
    expect(res.status).to.equal(201);
    expect(Object.keys(res.body)).to.deep.equal(['skill']);
    expect(Object.keys(res.body.skill).sort()).to.deep.equal(orgSkillKeys);
    expect(res.body.skill).to.include({
      organization_id: org,
      source: 'custom',
      name: 'Tone',
      description: 'Brand tone',
      body: 'Be kind.',
      files: null,
      author: null,
      project_scoped: false,
      created_by_id: alice.id,
      mod_shortcut_id: null,
      deleted_at: null,
      deleted_by_id: null,
    });
    expect(res.body.skill.created_at).to.equal(res.body.skill.updated_at);

    const missing = await ctx.server.request('post', `/organizations/${org}/skills`, { token: alice.token, body: { name: 'X', body: 'b' } });
    expect(missing.status).to.equal(400);
    expect(missing.body.data.issues[0].path).to.deep.equal(['description']);
    const extra = await ctx.server.request('post', `/organizations/${org}/skills`, {
      token: alice.token,
      body: { name: 'X', description: '', body: '', organization_id: org },
    });
    expect(extra.status).to.equal(400);
    const taken = await ctx.server.request('post', `/organizations/${org}/skills`, { token: alice.token, body: { name: 'TONE', description: '', body: '' } });
    expect(taken.status).to.equal(409);
    expect(taken.body).to.deep.equal({
      code: 'conflict',
      message: 'name: a skill named "TONE" already exists in this organization',
      data: { issues: [{ path: ['name'], message: 'name: a skill named "TONE" already exists in this organization' }] },
    });
    const stranger = newUser();
    expect(
      (await ctx.server.request('post', `/organizations/${org}/skills`, { token: stranger.token, body: { name: 'Y', description: '', body: '' } })).status,
    ).to.equal(404);
    await ctx.db('organization_roles').insert({ organization_id: org, key: 'reader', name: 'Reader', permissions: ['members.view'] });
    const reader = newUser();
    await addMember(ctx.db, org, reader, 'reader');
    expect(
      (await ctx.server.request('post', `/organizations/${org}/skills`, { token: reader.token, body: { name: 'Y', description: '', body: '' } })).status,
    ).to.equal(403);
    expect(await ctx.db('skills').where({ organization_id: org }).count('* as n').first()).to.deep.equal({ n: 1 });
  });

  it('every PATCH makes a version; versions list/get; restoring a version makes a new one copying it', async () => {
    const alice = newUser();
    const org = await createOrganization(ctx.server, alice);
    const skill = await create(alice, { organization_id: org, name: 'Draft', description: 'd1', body: 'b1' });
    const p1 = await ctx.server.request('patch', `/skills/${skill.id}`, { token: alice.token, body: { body: 'b2' } });
    expect(p1.status).to.equal(200);
    expect(p1.body.skill).to.include({ name: 'Draft', description: 'd1', body: 'b2' });
    const p2 = await ctx.server.request('patch', `/skills/${skill.id}`, { token: alice.token, body: { name: 'Final', files: { x: 1 } } });
    expect(p2.body.skill).to.include({ name: 'Final', body: 'b2' });
    expect(p2.body.skill.files).to.deep.equal({ x: 1 });

    const page1 = await ctx.server.request('get', `/skills/${skill.id}/versions`, { token: alice.token, query: { limit: 2 } });
    expect(page1.status).to.equal(200);
    expect(page1.body.items.map((v: any) => [v.version, v.name, v.body, v.current])).to.deep.equal([
      [3, 'Final', 'b2', true],
      [2, 'Draft', 'b2', false],
    ]);
    expect(Object.keys(page1.body.items[0]).sort()).to.deep.equal(versionKeys);
    const page2 = await ctx.server.request('get', `/skills/${skill.id}/versions`, { token: alice.token, query: { limit: 2, cursor: page1.body.next_cursor } });
    expect(page2.body.items.map((v: any) => v.version)).to.deep.equal([1]);
    expect(page2.body.next_cursor).to.equal(null);
    const first = page2.body.items[0];
    expect(first).to.deep.include({
      skill_id: skill.id,
      name: 'Draft',
      description: 'd1',
      body: 'b1',
      files: null,
      restored_from_version: null,
      created_by_id: alice.id,
    });

    const one = await ctx.server.request('get', `/skills/${skill.id}/versions/${first.id}`, { token: alice.token });
    expect(one.status).to.equal(200);
    expect(one.body).to.deep.equal({ version: first });
    expect((await ctx.server.request('get', `/skills/${skill.id}/versions/${randomUUID()}`, { token: alice.token })).status).to.equal(404);

    const restored = await ctx.server.request('post', `/skills/${skill.id}/versions/${first.id}/restore`, { token: alice.token });
    expect(restored.status).to.equal(200);
    expect(restored.body.skill).to.include({ name: 'Draft', description: 'd1', body: 'b1', files: null });
    const versions = await ctx.db('skill_versions').where({ skill_id: skill.id }).orderBy('version').select('version', 'name', 'restored_from_version');
    expect(versions).to.deep.equal([
      { version: 1, name: 'Draft', restored_from_version: null },
      { version: 2, name: 'Draft', restored_from_version: null },
      { version: 3, name: 'Final', restored_from_version: null },
      { version: 4, name: 'Draft', restored_from_version: 1 },
    ]);
    expect(await ctx.db('activity_events').where({ subject_id: skill.id }).orderBy('created_at').pluck('action')).to.deep.equal([
      'skill.created',
      'skill.updated',
      'skill.updated',
      'skill.version_restored',
    ]);
  });

  it('renaming onto a taken name is 409; delete/restore; restore is 409 when the name was taken meanwhile', async () => {
    const alice = newUser();
    const org = await createOrganization(ctx.server, alice);
    const one = await create(alice, { organization_id: org, name: 'One', description: '', body: '' });
    await create(alice, { organization_id: org, name: 'Two', description: '', body: '' });
    expect((await ctx.server.request('patch', `/skills/${one.id}`, { token: alice.token, body: { name: 'two' } })).status).to.equal(409);
    expect((await ctx.server.request('patch', `/skills/${one.id}`, { token: alice.token, body: {} })).status).to.equal(400);
    expect((await ctx.server.request('delete', `/skills/${one.id}`, { token: alice.token })).status).to.equal(204);
    const deleted = await ctx.server.request('get', `/skills/${one.id}`, { token: alice.token });
    expect(deleted.body.skill.deleted_by_id).to.equal(alice.id);
    expect((await ctx.server.request('patch', `/skills/${one.id}`, { token: alice.token, body: { body: 'x' } })).status).to.equal(409);
    const listed = await ctx.server.request('get', '/skills', { token: alice.token, query: { organization_id: org } });
    expect(listed.body.items.map((s: any) => s.name)).to.deep.equal(['Two']);
    const bin = await ctx.server.request('get', '/skills', { token: alice.token, query: { organization_id: org, deleted: true } });
    expect(bin.body.items.map((s: any) => s.name)).to.deep.equal(['One']);
    await create(alice, { organization_id: org, name: 'one', description: '', body: '' });
    const clash = await ctx.server.request('post', `/skills/${one.id}/restore`, { token: alice.token });
    expect(clash.status).to.equal(409);
    await ctx.db('skills').where({ organization_id: org, name: 'one' }).update({ name: 'uno' });
    const restored = await ctx.server.request('post', `/skills/${one.id}/restore`, { token: alice.token });
    expect(restored.status).to.equal(200);
    expect(Object.keys(restored.body)).to.deep.equal(['skill']);
    expect(restored.body.skill).to.include({ deleted_at: null, deleted_by_id: null, name: 'One' });
    const search = await ctx.server.request('get', '/skills', { token: alice.token, query: { organization_id: org, search: 'on' } });
    expect(search.body.items.map((s: any) => s.name)).to.deep.equal(['One']);
    for (const [method, suffix] of [
      ['get', ''],
      ['patch', ''],
      ['delete', ''],
      ['post', '/restore'],
      ['get', '/versions'],
      ['get', '/projects'],
    ] as const) {
      const res = await ctx.server.request(method, `/skills/${randomUUID()}${suffix}`, {
        token: alice.token,
        body: method === 'patch' ? { body: 'x' } : undefined,
      });
      expect(res.status, `${method} ${suffix}`).to.equal(404);
      expect(res.body).to.deep.equal({ code: 'not_found', message: 'skill not found', data: { issues: [] } });
    }
    expect((await ctx.server.request('get', '/skills/nope', { token: alice.token })).status).to.equal(400);
  });

  it('pages GET /skills by keyset', async () => {
    const alice = newUser();
    const org = await createOrganization(ctx.server, alice);
    for (let i = 0; i < 5; i++) await create(alice, { organization_id: org, name: `S${i}`, description: '', body: '' });
    const first = await ctx.server.request('get', '/skills', { token: alice.token, query: { organization_id: org, limit: 3 } });
    const second = await ctx.server.request('get', '/skills', {
      token: alice.token,
      query: { organization_id: org, limit: 3, cursor: first.body.next_cursor },
    });
    expect([...first.body.items, ...second.body.items].map((s: any) => s.name)).to.deep.equal(['S4', 'S3', 'S2', 'S1', 'S0']);
    expect(second.body.next_cursor).to.equal(null);
    expect((await ctx.server.request('get', '/skills', { token: alice.token })).status).to.equal(400);
  });
});
