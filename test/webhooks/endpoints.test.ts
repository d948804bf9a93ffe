import { expect } from 'chai';
import { createOrganization, newMember, newUser, type TestUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';
import { startReceiver, type Receiver } from './support.ts';

/** Webhook endpoints through the real API: shapes, the permission, secrets shown once, the URL guard on create and change. */
describe('webhook endpoints (API)', function () {
  this.timeout(30_000);
  let receiver: Receiver;
  before(async () => {
    receiver = await startReceiver();
  });
  after(() => receiver.close());
  const suite = useServer(() => ({ OUTBOUND_ALLOWLIST: `127.0.0.1:${receiver.port}` }));

  let owner: TestUser;
  let org: string;
  const path = () => `/organizations/${org}/webhook-endpoints`;
  beforeEach(async () => {
    owner = newUser();
    org = await createOrganization(suite.server, owner);
  });

  const create = (by: TestUser, body: Record<string, unknown>) => suite.server.request('post', path(), { token: by.token, body });

  it('creates an endpoint, shows its whsec_ secret once and stores it sealed, never in a read', async () => {
    const res = await create(owner, { url: `${receiver.url}/hook`, event_types: ['asset.enriched', 'member.added'], description: 'CRM sync' });
    expect(res.status).to.equal(201);
    const endpoint = res.body.webhook_endpoint;
    expect(res.body.secret).to.match(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(endpoint).to.deep.include({
      organization_id: org,
      url: `${receiver.url}/hook`,
      event_types: ['asset.enriched', 'member.added'],
      description: 'CRM sync',
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      secret_rotation_ends_at: null,
      created_by_id: owner.id,
    });
    const row = await suite.db('webhook_endpoints').where({ id: endpoint.id }).first();
    expect(row.secret_ciphertext.toString('utf8')).to.not.include(res.body.secret.slice(6));
    expect(row.secret_key_id).to.be.a('string');

    const read = await suite.server.request('get', `${path()}/${endpoint.id}`, { token: owner.token });
    expect(read.status).to.equal(200);
    expect(read.body).to.deep.equal({ webhook_endpoint: endpoint });
    const list = await suite.server.request('get', path(), { token: owner.token });
    expect(list.body).to.deep.equal({ items: [endpoint], next_cursor: null });
    expect(JSON.stringify(list.body)).to.not.include('whsec_');
  });

  it('rotates the secret: a new one shown once, the rotation window 24 h', async () => {
    const created = await create(owner, { url: receiver.url, event_types: ['*'] });
    const id = created.body.webhook_endpoint.id;
    const rotated = await suite.server.request('post', `${path()}/${id}/rotate-secret`, { token: owner.token });
    expect(rotated.status).to.equal(200);
    expect(rotated.body.secret)
      .to.match(/^whsec_/)
      .and.not.equal(created.body.secret);
    const ends = Date.parse(rotated.body.webhook_endpoint.secret_rotation_ends_at);
    expect(ends - Date.now()).to.be.within(23.9 * 3600_000, 24 * 3600_000);
  });

  it('pages endpoints newest first (keyset) and changes, disables and deletes one', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create(owner, { url: `${receiver.url}/${i}`, event_types: ['*'] })).body.webhook_endpoint.id);
    const first = await suite.server.request('get', path(), { token: owner.token, query: { limit: 2 } });
    const second = await suite.server.request('get', path(), { token: owner.token, query: { limit: 2, cursor: first.body.next_cursor } });
    expect([...first.body.items, ...second.body.items].map((e: { id: string }) => e.id)).to.deep.equal(ids.reverse());
    expect(second.body.next_cursor).to.equal(null);

    const patched = await suite.server.request('patch', `${path()}/${ids[0]}`, {
      token: owner.token,
      body: { event_types: ['member.removed'], description: null, enabled: false },
    });
    expect(patched.status).to.equal(200);
    expect(patched.body.webhook_endpoint).to.deep.include({ event_types: ['member.removed'], description: null, enabled: false });
    expect((await suite.server.request('delete', `${path()}/${ids[0]}`, { token: owner.token })).status).to.equal(204);
    expect((await suite.server.request('get', `${path()}/${ids[0]}`, { token: owner.token })).status).to.equal(404);
  });

  it('needs webhooks.manage: admins have it, members get 403, outsiders and other organizations 404', async () => {
    const admin = await newMember(suite.db, org, 'admin');
    const plain = await newMember(suite.db, org, 'member');
    const outsider = newUser();
    const made = await create(admin, { url: receiver.url, event_types: ['*'] });
    expect(made.status).to.equal(201);
    const id = made.body.webhook_endpoint.id;

    for (const [method, suffix] of [
      ['get', ''],
      ['post', ''],
      ['get', `/${id}`],
      ['patch', `/${id}`],
      ['delete', `/${id}`],
      ['post', `/${id}/rotate-secret`],
      ['post', `/${id}/test`],
      ['get', `/${id}/deliveries`],
    ] as const) {
      const body = method === 'post' && suffix === '' ? { url: receiver.url, event_types: ['*'] } : method === 'patch' ? { enabled: false } : undefined;
      const asMember = await suite.server.request(method, `${path()}${suffix}`, { token: plain.token, body });
      expect(asMember.status, `${method} ${suffix} as member`).to.equal(403);
      expect(asMember.body.code).to.equal('forbidden');
      const asOutsider = await suite.server.request(method, `${path()}${suffix}`, { token: outsider.token, body });
      expect(asOutsider.status, `${method} ${suffix} as outsider`).to.equal(404);
    }
    // An endpoint of another organization is 404 through this one's path, even to its owner.
    const otherOrg = await createOrganization(suite.server, outsider);
    const foreign = await suite.server.request('get', `/organizations/${otherOrg}/webhook-endpoints/${id}`, { token: outsider.token });
    expect(foreign.status).to.equal(404);
    // A custom role may hold it.
    const role = await suite.server.request('patch', `/organizations/${org}/roles`, {
      token: owner.token,
      body: { key: 'integrations', name: 'Integrations', permissions: ['members.view', 'webhooks.manage'] },
    });
    expect(role.status).to.be.oneOf([200, 201]);
    const integrator = await newMember(suite.db, org, 'integrations');
    expect((await suite.server.request('get', path(), { token: integrator.token })).status).to.equal(200);
  });

  it('refuses bad input naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: receiver.url, event_types: [] }, 'event_types'],
      [{ url: receiver.url, event_types: ['asset.nope'] }, 'event_types'],
      [{ url: receiver.url, event_types: ['*', '*'] }, 'event_types'],
      [{ url: receiver.url, event_types: ['ping'] }, 'event_types'],
      [{ url: receiver.url, event_types: ['*'], description: 'two\nlines' }, 'description'],
      [{ event_types: ['*'] }, 'url'],
      [{ url: receiver.url, event_types: ['*'], secret: 'whsec_mine' }, ''],
    ];
    for (const [body, field] of cases) {
      const res = await create(owner, body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.code).to.equal('validation_failed');
      if (field) expect(res.body.data.issues[0].path[0], JSON.stringify(body)).to.equal(field);
    }
  });

  it('refuses URLs the SSRF guard refuses, on create and on change (400 on url), unless allow-listed', async () => {
    const refused = [
      'http://127.0.0.1/',
      `http://127.0.0.1:${receiver.port + 1}/`,
      'http://localhost:8080/',
      'http://[::1]/',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.5/',
      'http://192.168.1.1/',
      'http://[::ffff:127.0.0.1]/',
      'http://[fd00::1]/',
      'ftp://example.com/',
      'http://user:pw@example.com/',
      'not a url',
    ];
    for (const url of refused) {
      const res = await create(owner, { url, event_types: ['*'] });
      expect(res.status, url).to.equal(400);
      expect(res.body.data.issues[0].path, url).to.deep.equal(['url']);
    }
    // A refused local address names the setting that opens it for development.
    const local = await create(owner, { url: `http://127.0.0.1:${receiver.port + 1}/`, event_types: ['*'] });
    expect(local.body.message).to.equal(
      `url: 127.0.0.1 is a loopback address, which is not allowed (server-side calls reach public addresses only; an operator may open 127.0.0.1:${receiver.port + 1} with OUTBOUND_ALLOWLIST)`,
    );
    const ok = await create(owner, { url: `${receiver.url}/in`, event_types: ['*'] });
    expect(ok.status).to.equal(201);
    const id = ok.body.webhook_endpoint.id;
    for (const url of ['http://127.0.0.1:9/', 'http://[::1]:80/']) {
      const res = await suite.server.request('patch', `${path()}/${id}`, { token: owner.token, body: { url } });
      expect(res.status, url).to.equal(400);
      expect(res.body.data.issues[0].path).to.deep.equal(['url']);
    }
    expect((await suite.db('webhook_endpoints').where({ id }).first('url')).url).to.equal(`${receiver.url}/in`);
  });
});
