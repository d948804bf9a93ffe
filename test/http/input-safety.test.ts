import { expect } from 'chai';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

const NUL = '\u0000';
const nulMessage = 'must not contain the NUL character (U+0000)';
const depthMessage = 'must nest at most 64 levels deep';

/** `levels` arrays nested in each other around 1. */
const nested = (levels: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
};

const validation = (message: string, path: (string | number)[], issueMessage: string) => ({
  code: 'validation_failed',
  message,
  data: { issues: [{ path, message: issueMessage }] },
});

describe('the validation boundary refuses unsafe input once, for every string and JSON field', () => {
  const ctx = useServer();

  describe('a NUL character is a 400 naming the field, never a 500', () => {
    it('in a body field (nothing is written)', async () => {
      const owner = newUser();
      const res = await ctx.server.request('post', '/organizations', { token: owner.token, body: { name: `Ac${NUL}me` } });
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal(validation(`name: ${nulMessage}`, ['name'], nulMessage));
      expect(await ctx.db('organizations').where({ created_by_id: owner.id }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
    });

    it('deep inside a JSON-valued field, and in its keys', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const inValue = await ctx.server.request('post', '/projects', {
        token: owner.token,
        body: { organization_id: org, title: 'Launch', metadata: { a: ['ok', `x${NUL}`] } },
      });
      expect(inValue.status).to.equal(400);
      expect(inValue.body).to.deep.equal(validation(`metadata.a.1: ${nulMessage}`, ['metadata', 'a', 1], nulMessage));
      const inKey = await ctx.server.request('post', '/projects', {
        token: owner.token,
        body: { organization_id: org, title: 'Launch', metadata: { [`k${NUL}`]: 1 } },
      });
      expect(inKey.status).to.equal(400);
      expect(inKey.body.message).to.equal('metadata: keys must not contain the NUL character (U+0000)');
      expect(await ctx.db('projects').where({ organization_id: org }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
    });

    it('in a path parameter', async () => {
      const owner = newUser();
      const res = await ctx.server.request('get', '/organizations/ab%00cd', { token: owner.token });
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal(validation(`params.organization_id: ${nulMessage}`, ['params', 'organization_id'], nulMessage));
      const member = await ctx.server.request('get', '/organizations/ab/members/u%00x', { token: owner.token });
      expect(member.status).to.equal(400);
      expect(member.body.message).to.equal(`params.user_id: ${nulMessage}`);
    });

    it('in a query parameter', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const res = await ctx.server.request('get', `/organizations/${org}/members`, { token: owner.token, query: { search: `a${NUL}b` } });
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal(validation(`query.search: ${nulMessage}`, ['query', 'search'], nulMessage));
      const canvases = await ctx.server.request('get', '/canvases', { token: owner.token, query: { organization_id: org, search: `${NUL}` } });
      expect(canvases.status).to.equal(400);
      expect(canvases.body.message).to.equal(`query.search: ${nulMessage}`);
    });

    it('in a PATCH body of another domain (member personalization)', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const res = await ctx.server.request('patch', `/organizations/${org}/members/${owner.id}/personalization`, {
        token: owner.token,
        body: { job_title: `Boss${NUL}` },
      });
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal(validation(`job_title: ${nulMessage}`, ['job_title'], nulMessage));
    });
  });

  describe('JSON-valued fields nest at most 64 levels deep', () => {
    it('accepts 64 levels and refuses 65 with a 400 naming the field', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const ok = await ctx.server.request('post', '/projects', { token: owner.token, body: { organization_id: org, title: 'Deep', metadata: nested(64) } });
      expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).to.equal(201);
      expect(ok.body.metadata).to.deep.equal(nested(64));
      const deep = await ctx.server.request('post', '/projects', { token: owner.token, body: { organization_id: org, title: 'Deeper', metadata: nested(65) } });
      expect(deep.status).to.equal(400);
      expect(deep.body).to.deep.equal(validation(`metadata: ${depthMessage}`, ['metadata'], depthMessage));
    });

    it('caps the size too: asset metadata over 64 KiB is a 400 naming the field', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const message = 'must be at most 64 KiB as JSON';
      const res = await ctx.server.request('post', '/assets', {
        token: owner.token,
        body: { organization_id: org, type: 'text', content: 'x', metadata: { notes: 'x'.repeat(70_000) } },
      });
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal(validation(`metadata: ${message}`, ['metadata'], message));
      expect(await ctx.db('assets').where({ organization_id: org }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
    });

    it('answers 5,000 levels in metadata, preferences and skill files with 400, not a stack overflow', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      // Built as text: JSON.stringify itself overflows on such values.
      const deep = `${'['.repeat(5000)}1${']'.repeat(5000)}`;
      const metadata = await ctx.server.request('post', '/assets', {
        token: owner.token,
        rawBody: `{"organization_id":"${org}","type":"text","content":"x","metadata":${deep}}`,
      });
      expect(metadata.status).to.equal(400);
      expect(metadata.body).to.deep.equal(validation(`metadata: ${depthMessage}`, ['metadata'], depthMessage));
      const preferences = await ctx.server.request('patch', `/organizations/${org}/members/${owner.id}/personalization`, {
        token: owner.token,
        rawBody: `{"preferences":{"theme":${deep}}}`,
      });
      expect(preferences.status).to.equal(400);
      expect(preferences.body).to.deep.equal(validation(`preferences: ${depthMessage}`, ['preferences'], depthMessage));
      const files = await ctx.server.request('post', '/skills', {
        token: owner.token,
        rawBody: `{"organization_id":"${org}","name":"Deep","description":"d","body":"b","files":${deep}}`,
      });
      expect(files.status).to.equal(400);
      expect(files.body).to.deep.equal(validation(`files: ${depthMessage}`, ['files'], depthMessage));
      expect(await ctx.db('skills').where({ organization_id: org }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
    });

    it('answers a body nested as deep as the body limit allows with 400', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const levels = 520_000; // 1,040,000 brackets: within the default body limit of 1 MiB
      const rawBody = `{"organization_id":"${org}","title":"Abyss","metadata":${'['.repeat(levels)}${']'.repeat(levels)}}`;
      const res = await ctx.server.request('post', '/projects', { token: owner.token, rawBody });
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal(validation(`metadata: ${depthMessage}`, ['metadata'], depthMessage));
    });
  });

  describe('single-line names refuse control characters', () => {
    const message = 'must be a single line without control characters';
    it('in organization, project, canvas and role names (400 naming the field; nothing written)', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const cases: [string, string, Record<string, unknown>, string][] = [
        ['post', '/organizations', { name: 'Acme\r\nBcc: victim@example.test' }, 'name'],
        ['patch', `/organizations/${org}`, { name: 'Ring\u0007' }, 'name'],
        ['post', '/projects', { organization_id: org, title: '\u001b[31mred' }, 'title'],
        ['post', '/canvases', { organization_id: org, title: 'line\nbreak' }, 'title'],
        ['patch', `/organizations/${org}/roles`, { key: 'reviewer', name: 'Re\tviewer', permissions: [] }, 'name'],
        ['post', '/skills', { organization_id: org, name: 'Skill\u0085', description: 'd', body: 'b' }, 'name'],
      ];
      for (const [method, path, body, field] of cases) {
        const res = await ctx.server.request(method, path, { token: owner.token, body });
        expect(res.status, `${method} ${path}`).to.equal(400);
        expect(res.body, `${method} ${path}`).to.deep.equal(validation(`${field}: ${message}`, [field], message));
      }
      expect((await ctx.db('organizations').where({ id: org }).first('name')).name).not.to.match(/[\u0000-\u001f]/);
      expect(await ctx.db('projects').where({ organization_id: org }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
      expect(await ctx.db('organization_roles').where({ organization_id: org }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
    });

    it('still accepts printable names, including markup (escaped where it is shown)', async () => {
      const owner = newUser();
      const res = await ctx.server.request('post', '/organizations', { token: owner.token, body: { name: '<b>Acme</b> & Co — Ünïcode' } });
      expect(res.status).to.equal(201);
      expect(res.body.organization.name).to.equal('<b>Acme</b> & Co — Ünïcode');
    });
  });

  describe('user ids: one limit (255) for tokens, paths and bodies', () => {
    it('a member whose id is 200 characters can be read, changed and removed', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const long = newUser({ id: `u${'x'.repeat(199)}` });
      await addMember(ctx.db, org, long, 'member');
      const me = await ctx.server.request('get', `/organizations/${org}`, { token: long.token });
      expect(me.status, JSON.stringify(me.body)).to.equal(200);
      const read = await ctx.server.request('get', `/organizations/${org}/members/${long.id}`, { token: owner.token });
      expect(read.status, JSON.stringify(read.body)).to.equal(200);
      expect(read.body.member.user_id).to.equal(long.id);
      const changed = await ctx.server.request('patch', `/organizations/${org}/members/${long.id}`, { token: owner.token, body: { role: 'admin' } });
      expect(changed.status, JSON.stringify(changed.body)).to.equal(200);
      expect(changed.body.member.role).to.equal('admin');
      const removed = await ctx.server.request('delete', `/organizations/${org}/members/${long.id}`, { token: owner.token });
      expect(removed.status, JSON.stringify(removed.body)).to.equal(204);
      expect(await ctx.db('organization_members').where({ organization_id: org, user_id: long.id }).first()).to.equal(undefined);
    });

    it('a 255-character id is accepted everywhere, a 256-character one nowhere', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const longest = newUser({ id: 'y'.repeat(255) });
      await addMember(ctx.db, org, longest, 'member');
      expect((await ctx.server.request('get', `/organizations/${org}/members/${longest.id}`, { token: owner.token })).status).to.equal(200);
      expect((await ctx.server.request('get', `/organizations/${org}`, { token: longest.token })).status).to.equal(200);
      const tooLong = 'z'.repeat(256);
      const path = await ctx.server.request('get', `/organizations/${org}/members/${tooLong}`, { token: owner.token });
      expect(path.status).to.equal(400);
      expect(path.body.message).to.match(/^params\.user_id: /);
      const adjust = (user_id: string) =>
        ctx.server.request('post', `/organizations/${org}/credits/adjustments`, { token: owner.token, body: { amount: 1, reason: 'r', user_id } });
      expect((await adjust(longest.id)).status).to.equal(201);
      const body = await adjust(tooLong);
      expect(body.status).to.equal(400);
      expect(body.body.message).to.match(/^user_id: /);
      const listed = await ctx.server.request('get', '/canvases', { token: owner.token, query: { organization_id: org, created_by: longest.id } });
      expect(listed.status, JSON.stringify(listed.body)).to.equal(200);
      const token = await ctx.server.request('get', `/organizations/${org}`, { token: newUser({ id: tooLong }).token });
      expect(token.status).to.equal(401);
      expect(token.body).to.deep.equal({
        code: 'unauthorized',
        message: 'a valid bearer token is required: token sub must be a string of 1–255 characters',
        data: { issues: [] },
      });
    });
  });
});
