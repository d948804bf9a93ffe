import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { ConfigError, parseConfig } from '../../src/config/load.ts';
import { connectorSecret } from '../../src/connectors/index.ts';
import { reencryptCredentials } from '../../src/connectors/reencrypt.ts';
import { keyringOf, openSecret, resolveKeyring, sealSecret } from '../../src/connectors/secrets.ts';
import { checkConnectorUrl } from '../../src/connectors/url-policy.ts';
import { startWeb } from '../../src/web.ts';
import { testConfig, testDataDir } from '../support/config.ts';
import { addMember, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { testDatabase } from '../support/hooks.ts';
import { request as rawRequest, type ApiResponse, type RequestOptions } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

const connectorKeys = [
  'id',
  'organization_id',
  'type',
  'name',
  'url',
  'auth_scheme',
  'needs_approval',
  'approval_tools',
  'created_by_id',
  'deleted_at',
  'deleted_by_id',
  'created_at',
  'updated_at',
];
const show = (res: ApiResponse) => `${res.status} ${JSON.stringify(res.body)}`;
const key = () => randomBytes(32).toString('base64');
const secretOf = (label: string) => `sk-${label}-${randomUUID()}-TAIL`;

describe('connectors and connector credentials', () => {
  const ctx = useServer();
  /** Every answer of every connector/credential request made below: no secret may appear in any of them. */
  const answers: string[] = [];
  const secretsSent: string[] = [];

  async function call(method: string, path: string, user: TestUser | null, options: Omit<RequestOptions, 'token'> = {}): Promise<ApiResponse> {
    const body = options.body as { secret?: string } | undefined;
    if (typeof body?.secret === 'string' && body.secret.length >= 8) secretsSent.push(body.secret);
    const res = await ctx.server.request(method, path, { ...options, token: user?.token ?? null });
    answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${JSON.stringify(res.body)}`);
    return res;
  }

  let org: string;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let outsider: TestUser;

  before(async () => {
    [owner, admin, member, outsider] = [newUser(), newUser(), newUser(), newUser()];
    org = await createOrganization(ctx.server, owner);
    await createOrganization(ctx.server, outsider);
    await addMember(ctx.db, org, admin, 'admin');
    await addMember(ctx.db, org, member, 'member');
  });

  const create = async (by: TestUser, fields: Record<string, unknown> = {}) => {
    const res = await call('post', '/connectors', by, {
      body: { organization_id: org, type: 'http', name: `Connector ${randomUUID().slice(0, 8)}`, ...fields },
    });
    expect(res.status, show(res)).to.equal(201);
    return res.body.connector;
  };

  describe('connectors', () => {
    it('POST /connectors answers 201 {connector} with every field; defaults auth_scheme none and url null', async () => {
      const res = await call('post', '/connectors', owner, { body: { organization_id: org, type: 'mcp', name: 'Docs server' } });
      expect(res.status, show(res)).to.equal(201);
      expect(Object.keys(res.body)).to.deep.equal(['connector']);
      expect(Object.keys(res.body.connector).sort()).to.deep.equal([...connectorKeys].sort());
      expect(res.body.connector).to.deep.include({
        organization_id: org,
        type: 'mcp',
        name: 'Docs server',
        url: null,
        auth_scheme: 'none',
        needs_approval: false,
        approval_tools: [],
        created_by_id: owner.id,
      });
      expect(res.body.connector.deleted_at).to.equal(null);
      const withUrl = await create(admin, { type: 'openapi', url: 'https://93.184.216.34/openapi.json', auth_scheme: 'bearer' });
      expect(withUrl).to.include({ url: 'https://93.184.216.34/openapi.json', auth_scheme: 'bearer', created_by_id: admin.id });
      const activity = await ctx.db('activity_events').where({ organization_id: org, action: 'connector.created', subject_id: withUrl.id });
      expect(activity).to.have.length(1);
    });

    it('400 naming the field: missing name, unknown type, unknown auth scheme, unknown field', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ organization_id: org, type: 'http' }, 'name'],
        [{ organization_id: org, type: 'smtp', name: 'x' }, 'type'],
        [{ organization_id: org, type: 'http', name: 'x', auth_scheme: 'oauth' }, 'auth_scheme'],
        [{ organization_id: org, type: 'http', name: 'x', secret: 'nope' }, 'secret'],
        [{ organization_id: org, type: 'http', name: 'line\nbreak' }, 'name'],
      ];
      for (const [body, field] of cases) {
        const res = await call('post', '/connectors', owner, { body });
        expect(res.status, show(res)).to.equal(400);
        expect(res.body.code).to.equal('validation_failed');
        expect(res.body.message, show(res)).to.include(field);
      }
    });

    it('refuses URLs the SSRF policy forbids (400 on url): private, loopback, link-local literals, localhost, other schemes, credentials', async () => {
      const refused = [
        'http://10.0.0.5/api',
        'http://127.0.0.1:8080/',
        'http://2130706433/', // 127.0.0.1 spelled as a number
        'http://[::1]/',
        'http://169.254.169.254/latest/meta-data/',
        'http://192.168.1.1/',
        'http://[::ffff:127.0.0.1]/',
        'http://localhost:3000/',
        'http://api.localhost/',
        'ftp://93.184.216.34/',
        'file:///etc/passwd',
        'https://user:pass@93.184.216.34/',
        'not a url',
      ];
      for (const url of refused) {
        const res = await call('post', '/connectors', owner, {
          body: { organization_id: org, type: 'http', name: `Refused ${randomUUID().slice(0, 6)}`, url },
        });
        expect(res.status, `${url}: ${show(res)}`).to.equal(400);
        expect(res.body.code).to.equal('validation_failed');
        expect(res.body.message, url).to.match(/^url: /);
        expect(res.body.data.issues, url).to.deep.equal([{ path: ['url'], message: res.body.message }]);
      }
      const named = async (url: string) =>
        (await call('post', '/connectors', owner, { body: { organization_id: org, type: 'http', name: `Refused ${randomUUID().slice(0, 6)}`, url } })).body
          .message;
      const hint = (hostAndPort: string) =>
        `which is not allowed (server-side calls reach public addresses only; an operator may open ${hostAndPort} with OUTBOUND_ALLOWLIST)`;
      expect(await named('http://127.0.0.1:8080/')).to.equal(`url: 127.0.0.1 is a loopback address, ${hint('127.0.0.1:8080')}`);
      expect(await named('http://localhost:3000/')).to.equal(`url: localhost is a loopback name, ${hint('localhost:3000')}`);
      expect(await named('https://[::1]/')).to.equal(`url: ::1 is a loopback address, ${hint('[::1]:443')}`);
      const connector = await create(owner);
      const patched = await call('patch', `/connectors/${connector.id}`, owner, { body: { url: 'http://10.1.2.3/' } });
      expect(patched.status, show(patched)).to.equal(400);
      expect(patched.body.data.issues[0].path).to.deep.equal(['url']);
      expect(await ctx.db('connectors').where({ organization_id: org }).whereLike('name', 'Refused %')).to.deep.equal([]);
    });

    it('the URL check follows OUTBOUND_ALLOWLIST and normalises the URL (unit)', async () => {
      expect(await checkConnectorUrl('http://127.0.0.1:9/x#frag', ['127.0.0.1:9'])).to.equal('http://127.0.0.1:9/x');
      await checkConnectorUrl('http://127.0.0.1:10/x', ['127.0.0.1:9']).then(
        () => expect.fail('port 10 is not allowlisted'),
        (error: Error) => expect(error.message).to.match(/^url: 127\.0\.0\.1 is a loopback address/),
      );
      expect(await checkConnectorUrl('HTTPS://93.184.216.34', [])).to.equal('https://93.184.216.34/');
    });

    it('a live name is unique per organization (case-insensitive): 409 on create and rename; free again after delete', async () => {
      const first = await create(owner, { name: 'Unique One' });
      const again = await call('post', '/connectors', admin, { body: { organization_id: org, type: 'http', name: 'unique one' } });
      expect(again.status, show(again)).to.equal(409);
      expect(again.body.code).to.equal('conflict');
      expect(again.body.data.issues[0].path).to.deep.equal(['name']);
      const second = await create(owner, { name: 'Unique Two' });
      const rename = await call('patch', `/connectors/${second.id}`, owner, { body: { name: 'UNIQUE ONE' } });
      expect(rename.status, show(rename)).to.equal(409);
      expect((await call('delete', `/connectors/${first.id}`, owner)).status).to.equal(204);
      const reused = await call('patch', `/connectors/${second.id}`, owner, { body: { name: 'Unique One' } });
      expect(reused.status, show(reused)).to.equal(200);
    });

    it('permission matrix: connectors.manage (owner, admin) creates, changes, deletes; a member reads; an outsider gets 403 on create and 404 by id', async () => {
      const denied = await call('post', '/connectors', member, { body: { organization_id: org, type: 'http', name: 'By a member' } });
      expect(denied.status, show(denied)).to.equal(403);
      expect(denied.body.code).to.equal('forbidden');
      expect(denied.body.message).to.include('connectors.manage');
      for (const organization of [org, randomUUID()]) {
        const outside = await call('post', '/connectors', outsider, { body: { organization_id: organization, type: 'http', name: 'By an outsider' } });
        expect(outside.status, show(outside)).to.equal(403);
      }

      const connector = await create(admin);
      const path = `/connectors/${connector.id}`;
      const missing = `/connectors/${randomUUID()}`;

      const read = await call('get', path, member);
      expect(read.status, show(read)).to.equal(200);
      expect(read.body).to.deep.equal({ connector });

      const memberPatch = await call('patch', path, member, { body: { name: 'Renamed by a member' } });
      expect(memberPatch.status, show(memberPatch)).to.equal(403);
      const memberDelete = await call('delete', path, member);
      expect(memberDelete.status, show(memberDelete)).to.equal(403);

      // An outsider gets exactly what a missing id gets.
      for (const [method, body] of [
        ['get', undefined],
        ['patch', { name: 'Renamed by an outsider' }],
        ['delete', undefined],
      ] as const) {
        const [existing, none] = await Promise.all([call(method, path, outsider, { body }), call(method, missing, outsider, { body })]);
        expect(existing.status, `${method}: ${show(existing)}`).to.equal(404);
        expect(existing.body).to.deep.equal(none.body);
        expect(existing.body).to.deep.equal({ code: 'not_found', message: 'connector not found', data: { issues: [] } });
      }

      const patched = await call('patch', path, owner, { body: { name: 'Renamed', url: 'https://93.184.216.34/v2', auth_scheme: 'header', type: 'openapi' } });
      expect(patched.status, show(patched)).to.equal(200);
      expect(patched.body.connector).to.include({ id: connector.id, name: 'Renamed', url: 'https://93.184.216.34/v2', auth_scheme: 'header', type: 'openapi' });
      const cleared = await call('patch', path, admin, { body: { url: null } });
      expect(cleared.body.connector.url).to.equal(null);
      const empty = await call('patch', path, admin, { body: {} });
      expect(empty.status, show(empty)).to.equal(400);

      expect((await call('delete', path, admin)).status).to.equal(204);
      const row = await ctx.db('connectors').where({ id: connector.id }).first();
      expect(row.deleted_by_id).to.equal(admin.id);
      expect(row.deleted_at).to.be.an.instanceOf(Date);
      const afterDelete = await call('get', path, member);
      expect(afterDelete.status).to.equal(200);
      expect(afterDelete.body.connector.deleted_at).to.be.a('string');
      expect((await call('patch', path, owner, { body: { name: 'Too late' } })).status).to.equal(409);
      expect((await call('delete', path, owner)).status, 'deleting again is a no-op').to.equal(204);
    });

    it('GET /connectors lists live connectors newest first, keyset paged, for any member; an empty page outside', async () => {
      const listOrg = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, listOrg, member, 'member');
      const made = [];
      for (let i = 0; i < 5; i++) {
        const res = await call('post', '/connectors', owner, { body: { organization_id: listOrg, type: 'http', name: `Listed ${i}` } });
        made.push(res.body.connector);
      }
      await call('delete', `/connectors/${made[2].id}`, owner);
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await call('get', '/connectors', member, { query: { organization_id: listOrg, limit: 2, cursor } });
        expect(page.status, show(page)).to.equal(200);
        expect(Object.keys(page.body).sort()).to.deep.equal(['items', 'next_cursor']);
        seen.push(...page.body.items.map((c: { id: string }) => c.id));
        cursor = page.body.next_cursor ?? undefined;
      } while (cursor);
      expect(seen).to.deep.equal([made[4].id, made[3].id, made[1].id, made[0].id]);
      const outside = await call('get', '/connectors', outsider, { query: { organization_id: listOrg } });
      expect(outside.status).to.equal(200);
      expect(outside.body).to.deep.equal({ items: [], next_cursor: null });
    });
  });

  describe('credentials', () => {
    it('each user sets, replaces and removes their own secret; answers show only set, last4 and updated_at', async () => {
      const connector = await create(owner, { auth_scheme: 'bearer' });
      const path = `/connector-credentials/${connector.id}`;
      const first = secretOf('first');
      const set = await call('patch', path, member, { body: { secret: first } });
      expect(set.status, show(set)).to.equal(200);
      expect(Object.keys(set.body)).to.deep.equal(['credential']);
      expect(Object.keys(set.body.credential).sort()).to.deep.equal(['connector_id', 'last4', 'set', 'updated_at']);
      expect(set.body.credential).to.include({ connector_id: connector.id, set: true, last4: 'TAIL' });

      const mine = await call('get', '/connector-credentials', member, { query: { organization_id: org } });
      expect(mine.status, show(mine)).to.equal(200);
      const item = mine.body.items.find((i: { connector_id: string }) => i.connector_id === connector.id);
      expect(item).to.deep.equal(set.body.credential);
      // Another member of the organization does not see it as theirs.
      const theirs = await call('get', '/connector-credentials', admin, { query: { organization_id: org, limit: 100 } });
      expect(theirs.body.items.find((i: { connector_id: string }) => i.connector_id === connector.id)).to.deep.equal({
        connector_id: connector.id,
        set: false,
        last4: null,
        updated_at: null,
      });

      const second = `${secretOf('second').slice(0, -4)}WXYZ`;
      const replaced = await call('patch', path, member, { body: { secret: second } });
      expect(replaced.status).to.equal(200);
      expect(replaced.body.credential.last4).to.equal('WXYZ');
      expect(Date.parse(replaced.body.credential.updated_at)).to.be.at.least(Date.parse(set.body.credential.updated_at));
      expect(await ctx.db('connector_credentials').where({ connector_id: connector.id })).to.have.length(1);
      expect(await connectorSecret({ config: testConfig(), db: ctx.db }, connector.id, member.id)).to.equal(second);

      const short = await call('patch', path, admin, { body: { secret: 'short-pw' } });
      expect(short.body.credential).to.include({ set: true, last4: null }); // too short to show any of it

      expect((await call('delete', path, member)).status).to.equal(204);
      expect((await call('delete', path, member)).status, 'removing again is a no-op').to.equal(204);
      expect(await connectorSecret({ config: testConfig(), db: ctx.db }, connector.id, member.id)).to.equal(null);
      const after = await call('get', '/connector-credentials', member, { query: { organization_id: org, limit: 100 } });
      expect(after.body.items.find((i: { connector_id: string }) => i.connector_id === connector.id)).to.include({ set: false, last4: null });
      expect(await ctx.db('connector_credentials').where({ connector_id: connector.id, user_id: admin.id })).to.have.length(1);
    });

    it('400 naming secret; an outsider gets 404 like a missing id; an empty page outside; deleting the connector erases its credentials', async () => {
      const connector = await create(owner);
      const path = `/connector-credentials/${connector.id}`;
      for (const body of [{}, { secret: '' }, { secret: 'x'.repeat(8193) }, { secret: 42 }]) {
        const res = await call('patch', path, member, { body });
        expect(res.status, show(res)).to.equal(400);
        expect(res.body.message).to.match(/^secret: /);
      }
      const probe = secretOf('outsider');
      for (const method of ['patch', 'delete']) {
        const body = method === 'patch' ? { secret: probe } : undefined;
        const [existing, none] = await Promise.all([
          call(method, path, outsider, { body }),
          call(method, `/connector-credentials/${randomUUID()}`, outsider, { body }),
        ]);
        expect(existing.status, show(existing)).to.equal(404);
        expect(existing.body).to.deep.equal(none.body);
      }
      const outside = await call('get', '/connector-credentials', outsider, { query: { organization_id: org } });
      expect(outside.body).to.deep.equal({ items: [], next_cursor: null });
      const notId = await call('patch', '/connector-credentials/not-a-uuid', member, { body: { secret: 'x' } });
      expect(notId.status).to.equal(400);
      expect(notId.body.message).to.include('params.connector_id');

      await call('patch', path, member, { body: { secret: secretOf('erased') } });
      await call('patch', path, owner, { body: { secret: secretOf('erased-too') } });
      expect(await ctx.db('connector_credentials').where({ connector_id: connector.id })).to.have.length(2);
      expect((await call('delete', `/connectors/${connector.id}`, admin)).status).to.equal(204);
      expect(await ctx.db('connector_credentials').where({ connector_id: connector.id })).to.deep.equal([]);
      const late = await call('patch', path, member, { body: { secret: secretOf('late') } });
      expect(late.status, show(late)).to.equal(409);
      const listed = await call('get', '/connector-credentials', member, { query: { organization_id: org, limit: 100 } });
      expect(listed.body.items.map((i: { connector_id: string }) => i.connector_id)).to.not.include(connector.id);
    });

    it('the stored ciphertext is not the secret and opens back with the key, bound to its row (unit)', async () => {
      const connector = await create(owner);
      const secret = secretOf('at-rest');
      await call('patch', `/connector-credentials/${connector.id}`, member, { body: { secret } });
      const row = await ctx.db('connector_credentials').where({ connector_id: connector.id, user_id: member.id }).first();
      expect(row.ciphertext).to.be.an.instanceOf(Buffer);
      expect(row.ciphertext.includes(Buffer.from(secret))).to.equal(false);
      expect(row.ciphertext.toString('utf8')).to.not.include(secret);
      expect(row.iv).to.have.length(12);
      expect(row.auth_tag).to.have.length(16);
      expect(row.key_id).to.equal('local');
      expect(JSON.stringify(row)).to.not.include(secret);
      const keyring = (await resolveKeyring(testConfig()))!;
      const sealed = { ciphertext: row.ciphertext, iv: row.iv, authTag: row.auth_tag, keyId: row.key_id };
      expect(openSecret(keyring, sealed, { connectorId: connector.id, userId: member.id })).to.equal(secret);
      expect(() => openSecret(keyring, sealed, { connectorId: connector.id, userId: owner.id }), 'copied to another user').to.throw();
      // A random IV per secret: the same secret twice seals differently.
      const a = sealSecret(keyring, secret, { connectorId: connector.id, userId: member.id });
      const b = sealSecret(keyring, secret, { connectorId: connector.id, userId: member.id });
      expect(a.iv.equals(b.iv)).to.equal(false);
      expect(a.ciphertext.equals(b.ciphertext)).to.equal(false);
    });

    it('key rotation: old ciphertext still opens with the old key listed second; re-encrypt moves every row to the first key, in batches, idempotently', async () => {
      const oldRing = keyringOf([{ id: 'old', key: Buffer.from(key(), 'base64') }]);
      const newKey = { id: 'new', key: Buffer.from(key(), 'base64') };
      // The generated key of this test configuration sealed the credentials of the tests above: it stays listed too.
      const local = (await resolveKeyring(testConfig()))!.current;
      const rotated = keyringOf([newKey, oldRing.current, local]);
      const connector = await create(owner);
      const users = [newUser(), newUser(), newUser(), newUser(), newUser()];
      const secrets = new Map<string, string>();
      for (const user of users) {
        await addMember(ctx.db, org, user, 'member');
        const secret = secretOf(user.id);
        secrets.set(user.id, secret);
        const sealed = sealSecret(oldRing, secret, { connectorId: connector.id, userId: user.id });
        await ctx.db('connector_credentials').insert({
          connector_id: connector.id,
          user_id: user.id,
          ciphertext: sealed.ciphertext,
          iv: sealed.iv,
          auth_tag: sealed.authTag,
          key_id: sealed.keyId,
          last4: 'TAIL',
        });
      }
      const rows = () => ctx.db('connector_credentials').where({ connector_id: connector.id });
      for (const row of await rows()) {
        const sealed = { ciphertext: row.ciphertext, iv: row.iv, authTag: row.auth_tag, keyId: row.key_id };
        expect(openSecret(rotated, sealed, { connectorId: connector.id, userId: row.user_id })).to.equal(secrets.get(row.user_id));
      }
      const before = await rows();
      const pending = (await ctx.db('connector_credentials').whereNot({ key_id: 'new' })).length;
      expect(pending).to.be.at.least(5);
      expect(await reencryptCredentials(ctx.db, rotated, { batchSize: 2 })).to.deep.equal({ reencrypted: pending });
      const after = await rows();
      const newOnly = keyringOf([newKey]);
      for (const row of after) {
        expect(row.key_id).to.equal('new');
        const sealed = { ciphertext: row.ciphertext, iv: row.iv, authTag: row.auth_tag, keyId: row.key_id };
        expect(openSecret(newOnly, sealed, { connectorId: connector.id, userId: row.user_id })).to.equal(secrets.get(row.user_id));
        const earlier = before.find((b: { user_id: string }) => b.user_id === row.user_id);
        expect(row.updated_at.getTime(), 'when the user set it is kept').to.equal(earlier.updated_at.getTime());
      }
      expect(await reencryptCredentials(ctx.db, rotated, { batchSize: 2 }), 'a second run has nothing to do').to.deep.equal({ reencrypted: 0 });
      expect(await ctx.db('connector_credentials').whereNot({ key_id: 'new' })).to.deep.equal([]);
    });

    it('a server configured with CONNECTOR_SECRET_KEYS seals under its first key; production without it refuses to store (unit)', async () => {
      const keys = `primary:${key()},older:${key()}`;
      const config = testConfig({ CONNECTOR_SECRET_KEYS: keys });
      const keyring = (await resolveKeyring(config))!;
      expect(keyring.current.id).to.equal('primary');
      expect([...keyring.keys.keys()]).to.deep.equal(['primary', 'older']);
      expect(await resolveKeyring({ NODE_ENV: 'production', DATA_DIR: testDataDir(), CONNECTOR_SECRET_KEYS: undefined })).to.equal(null);
    });
  });

  describe('CONNECTOR_SECRET_KEYS at boot', () => {
    const valid = { NODE_ENV: 'test', JWT_SECRET: 'x'.repeat(40) };
    const cases: [string, string][] = [
      ['a key of 16 bytes', `k1:${randomBytes(16).toString('base64')}`],
      ['no key id', key()],
      ['a bad key id', `bad id:${key()}`],
      ['a repeated key id', `k1:${key()},k1:${key()}`],
      ['an empty entry', `k1:${key()},`],
    ];
    for (const [label, value] of cases) {
      it(`${label} stops the process with one line naming CONNECTOR_SECRET_KEYS`, () => {
        let error: unknown;
        try {
          parseConfig({ ...valid, CONNECTOR_SECRET_KEYS: value });
        } catch (thrown) {
          error = thrown;
        }
        expect(error).to.be.instanceOf(ConfigError);
        expect((error as Error).message).to.match(/^Invalid configuration: CONNECTOR_SECRET_KEYS /);
        expect((error as Error).message).to.not.include('\n');
        expect((error as Error).message, 'no key material').to.not.include(value.replace(/,$/, '').slice(-12));
      });
    }

    it('parses valid keys (the first encrypts) and leaves an empty value unset', () => {
      const config = parseConfig({ ...valid, CONNECTOR_SECRET_KEYS: `a:${key()}, b.2:${randomBytes(32).toString('base64url')}` });
      expect(config.CONNECTOR_SECRET_KEYS!.map((k) => [k.id, k.key.length])).to.deep.equal([
        ['a', 32],
        ['b.2', 32],
      ]);
      expect(parseConfig({ ...valid, CONNECTOR_SECRET_KEYS: '' }).CONNECTOR_SECRET_KEYS).to.equal(undefined);
    });
  });

  it('no log line of a connector or credential request carries the secret', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const config = testConfig({ LOG_LEVEL: 'trace' });
    const web = await startWeb(config, testDatabase().url, pino({ level: 'trace' }, sink));
    try {
      const connector = await create(owner);
      const secret = secretOf('logged');
      const address = web.server.address();
      const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const sent = [
        await rawRequest(base, 'patch', `/connector-credentials/${connector.id}`, { token: member.token, body: { secret } }),
        await rawRequest(base, 'patch', `/connector-credentials/${connector.id}`, { token: member.token, body: { secret, extra: secret } }),
        await rawRequest(base, 'patch', `/connector-credentials/${connector.id}`, { token: outsider.token, body: { secret } }),
        await rawRequest(base, 'patch', `/connector-credentials/${connector.id}`, { token: member.token, rawBody: `{"secret": "${secret}"` }),
      ];
      expect(sent.map((r) => r.status)).to.deep.equal([200, 400, 404, 400]);
      for (const res of sent) expect(JSON.stringify(res.body)).to.not.include(secret);
      expect(lines.length).to.be.greaterThan(0);
      for (const line of lines) expect(line).to.not.include(secret);
    } finally {
      await web.stop();
    }
  });

  after(() => {
    // Collected across every test above: no answer of any connector or credential route carried a secret.
    expect(secretsSent.length).to.be.greaterThan(5);
    expect(answers.length).to.be.greaterThan(50);
    for (const secret of secretsSent) for (const answer of answers) expect(answer.includes(secret), `${secret} in ${answer}`).to.equal(false);
  });
});
