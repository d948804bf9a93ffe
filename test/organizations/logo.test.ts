import { expect } from 'chai';
import { createStorage } from '../../src/providers/storage/index.ts';
import { testConfig } from '../support/config.ts';
import { pngClaiming } from '../assets/helpers.ts';
import { createOrganization } from '../support/organizations.ts';
import { FAKE_S3_CREDENTIALS, startFakeS3, type FakeS3 } from '../support/fake-s3.ts';
import { newUser, startTestServer, type TestServer, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

// Smallest valid images of each accepted type (1×1 pixel).
const images = {
  'image/png': 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'image/gif': 'R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7',
  'image/webp': 'UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==',
  'image/jpeg': '/9j/4AAQSkZJRgABAQAAAQABAAD/wAARCAABAAEDASIAAhEBAxEB/9k=',
};

describe('organization logo', () => {
  const ctx = useServer();
  const storage = createStorage(testConfig()); // the same local store the server writes to

  const putLogo = (user: TestUser, id: string, content_type: string, data: string) =>
    ctx.server.request('put', `/organizations/${id}/logo`, { token: user.token, body: { content_type, data } });

  for (const [contentType, data] of Object.entries(images)) {
    it(`stores a ${contentType} logo, serves it to members and records the activity`, async () => {
      const owner = newUser();
      const id = await createOrganization(ctx.server, owner);
      const res = await putLogo(owner, id, contentType, data);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.organization.id).to.equal(id);
      expect(res.body.organization.logo_url).to.match(new RegExp(`^/organizations/${id}/logo\\?v=\\d+$`));

      const row = await ctx.db('organizations').where({ id }).first();
      expect(row.logo_key).to.match(new RegExp(`^organizations/${id}/logo/`));
      expect(row.logo_content_type).to.equal(contentType);
      expect((await storage.get(row.logo_key))?.body.equals(Buffer.from(data, 'base64'))).to.equal(true);
      const activity = await ctx.db('activity_events').where({ organization_id: id, action: 'organization.logo_updated' }).first();
      expect(activity).to.include({ actor_id: owner.id, subject_type: 'organization', subject_id: id });
      expect(activity.data).to.deep.equal({ content_type: contentType, size: Buffer.from(data, 'base64').length });

      const image = await fetch(new URL(res.body.organization.logo_url, ctx.server.url), { headers: { authorization: `Bearer ${owner.token}` } });
      expect(image.status).to.equal(200);
      expect(image.headers.get('content-type')).to.equal(contentType);
      expect(Buffer.from(await image.arrayBuffer()).equals(Buffer.from(data, 'base64'))).to.equal(true);
    });
  }

  it('replaces the logo and deletes the previous object', async () => {
    const owner = newUser();
    const id = await createOrganization(ctx.server, owner);
    await putLogo(owner, id, 'image/png', images['image/png']);
    const first = (await ctx.db('organizations').where({ id }).first()).logo_key;
    const replaced = await putLogo(owner, id, 'image/gif', images['image/gif']);
    expect(replaced.status).to.equal(200);
    const second = (await ctx.db('organizations').where({ id }).first()).logo_key;
    expect(second).to.not.equal(first);
    expect(await storage.get(first)).to.equal(null);
    expect((await storage.get(second))?.contentType).to.equal('image/gif');
  });

  it('refuses bytes that are not an image of the declared type, bad base64, other types and unknown fields', async () => {
    const owner = newUser();
    const id = await createOrganization(ctx.server, owner);
    const mismatch = await putLogo(owner, id, 'image/jpeg', images['image/png']);
    expect(mismatch.status).to.equal(400);
    expect(mismatch.body).to.deep.equal({
      code: 'validation_failed',
      message: 'data: the bytes are a png image, not image/jpeg',
      data: { issues: [{ path: ['data'], message: 'data: the bytes are a png image, not image/jpeg' }] },
    });
    const text = await putLogo(owner, id, 'image/png', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>').toString('base64'));
    expect(text.status).to.equal(400);
    expect(text.body.message).to.equal('data: the bytes are not an image, not image/png');
    const notBase64 = await putLogo(owner, id, 'image/png', 'this is not base64!');
    expect(notBase64.status).to.equal(400);
    expect(notBase64.body.data.issues[0].path).to.deep.equal(['data']);
    const svg = await putLogo(owner, id, 'image/svg+xml', images['image/png']);
    expect(svg.status).to.equal(400);
    expect(svg.body.data.issues[0].path).to.deep.equal(['content_type']);
    const extra = await ctx.server.request('put', `/organizations/${id}/logo`, {
      token: owner.token,
      body: { content_type: 'image/png', data: images['image/png'], alt: 'x' },
    });
    expect(extra.status).to.equal(400);
    expect(extra.body.message).to.include('alt');
    expect((await ctx.db('organizations').where({ id }).first()).logo_key).to.equal(null);
  });

  it('refuses an image over 1 MiB with 413', async () => {
    const owner = newUser();
    const id = await createOrganization(ctx.server, owner);
    const png = Buffer.from(images['image/png'], 'base64');
    const big = Buffer.concat([png, Buffer.alloc(1024 * 1024 + 1 - png.length)]);
    const res = await putLogo(owner, id, 'image/png', big.toString('base64'));
    expect(res.status).to.equal(413);
    expect(res.body.code).to.equal('validation_failed');
    expect(res.body.data.issues).to.deep.equal([{ path: ['data'], message: 'at most 1048576 bytes once decoded' }]);
    // Exactly 1 MiB is accepted (image-size reads the header; trailing bytes are allowed).
    const limit = Buffer.concat([png, Buffer.alloc(1024 * 1024 - png.length)]);
    expect((await putLogo(owner, id, 'image/png', limit.toString('base64'))).status).to.equal(200);
  });

  it('refuses a PNG whose header claims 100,000 × 100,000 pixels: 400 naming data and the maximum, nothing stored', async () => {
    const owner = newUser();
    const id = await createOrganization(ctx.server, owner);
    const res = await putLogo(owner, id, 'image/png', pngClaiming(100_000, 100_000).toString('base64'));
    const rule = 'at most 8192 pixels wide and high and 40 megapixels in all';
    expect(res.status).to.equal(400);
    expect(res.body).to.deep.equal({
      code: 'validation_failed',
      message: `data: the image is 100000×100000 pixels; it may be ${rule}`,
      data: { issues: [{ path: ['data'], message: rule }] },
    });
    expect((await ctx.db('organizations').where({ id }).first()).logo_key).to.equal(null);
    expect(await ctx.db('activity_events').where({ organization_id: id, action: 'organization.logo_updated' })).to.have.length(0);
  });

  it('needs organization.update (403 for a member) and membership (404 for others, like a missing organization)', async () => {
    const owner = newUser();
    const member = newUser();
    const stranger = newUser();
    const id = await createOrganization(ctx.server, owner);
    await ctx.server.request('get', '/organizations/available-slug', { token: member.token, query: { slug: 'x' } }); // creates the user row
    await ctx.db('organization_members').insert({ organization_id: id, user_id: member.id, role: 'member' });
    await putLogo(owner, id, 'image/png', images['image/png']);

    const forbidden = await putLogo(member, id, 'image/gif', images['image/gif']);
    expect(forbidden.status).to.equal(403);
    expect(forbidden.body.code).to.equal('forbidden');
    expect((await ctx.server.request('delete', `/organizations/${id}/logo`, { token: member.token })).status).to.equal(403);
    // Members may still see it.
    const seen = await ctx.server.request('get', `/organizations/${id}/logo`, { token: member.token });
    expect(seen.status).to.equal(200);

    const hidden = await putLogo(stranger, id, 'image/png', images['image/png']);
    const missing = await putLogo(stranger, 'no-such-organization', 'image/png', images['image/png']);
    expect(hidden.status).to.equal(404);
    expect(hidden.body).to.deep.equal(missing.body);
    const read = await ctx.server.request('get', `/organizations/${id}/logo`, { token: stranger.token });
    expect(read.status).to.equal(404);
    expect(read.body).to.deep.equal((await ctx.server.request('get', `/organizations/no-such-organization/logo`, { token: stranger.token })).body);
    expect((await ctx.server.request('delete', `/organizations/${id}/logo`, { token: stranger.token })).status).to.equal(404);
  });

  it('DELETE removes the logo and its object, records it, and is idempotent', async () => {
    const owner = newUser();
    const id = await createOrganization(ctx.server, owner);
    await putLogo(owner, id, 'image/webp', images['image/webp']);
    const key = (await ctx.db('organizations').where({ id }).first()).logo_key;
    const res = await ctx.server.request('delete', `/organizations/${id}/logo`, { token: owner.token });
    expect(res.status).to.equal(204);
    expect(res.body).to.equal(undefined);
    const read = await ctx.server.request('get', `/organizations/${id}`, { token: owner.token });
    expect(read.body.organization).to.include({ id, logo_url: null });
    expect(await storage.get(key)).to.equal(null);
    expect(await ctx.db('organizations').where({ id }).first('logo_key', 'logo_content_type')).to.deep.equal({ logo_key: null, logo_content_type: null });
    expect(
      await ctx.db('activity_events').where({ organization_id: id, action: 'organization.logo_removed' }).count<{ count: number }[]>('* as count'),
    ).to.deep.equal([{ count: 1 }]);
    const image = await ctx.server.request('get', `/organizations/${id}/logo`, { token: owner.token });
    expect(image.status).to.equal(404);
    expect(image.body).to.deep.equal({ code: 'not_found', message: 'logo not found', data: { issues: [] } });
    const again = await ctx.server.request('delete', `/organizations/${id}/logo`, { token: owner.token });
    expect(again.status).to.equal(204);
    expect(again.body).to.equal(undefined);
    expect(
      await ctx.db('activity_events').where({ organization_id: id, action: 'organization.logo_removed' }).count<{ count: number }[]>('* as count'),
    ).to.deep.equal([{ count: 1 }]);
  });

  describe('on S3-compatible storage (STORAGE_S3_ENDPOINT)', () => {
    let s3: FakeS3;
    let s3Server: TestServer;
    before(async () => {
      s3 = await startFakeS3();
      s3Server = await startTestServer({
        STORAGE_S3_ENDPOINT: s3.endpoint,
        STORAGE_S3_BUCKET: s3.bucket,
        STORAGE_S3_ACCESS_KEY_ID: FAKE_S3_CREDENTIALS.accessKeyId,
        STORAGE_S3_SECRET_ACCESS_KEY: FAKE_S3_CREDENTIALS.secretAccessKey,
      });
    });
    after(async () => {
      await s3Server.stop();
      await s3.close();
    });

    it('stores, serves and deletes the logo through the bucket', async () => {
      const owner = newUser();
      const created = await s3Server.request('post', '/organizations', { token: owner.token, body: { name: 'Bucket Co' } });
      const id = created.body.organization.id;
      const put = await s3Server.request('put', `/organizations/${id}/logo`, {
        token: owner.token,
        body: { content_type: 'image/png', data: images['image/png'] },
      });
      expect(put.status).to.equal(200);
      const key = (await ctx.db('organizations').where({ id }).first()).logo_key;
      expect(s3.objects.get(key)?.contentType).to.equal('image/png');
      const image = await fetch(new URL(`/organizations/${id}/logo`, s3Server.url), { headers: { authorization: `Bearer ${owner.token}` } });
      expect(image.headers.get('content-type')).to.equal('image/png');
      expect(Buffer.from(await image.arrayBuffer()).equals(Buffer.from(images['image/png'], 'base64'))).to.equal(true);
      expect((await s3Server.request('delete', `/organizations/${id}/logo`, { token: owner.token })).status).to.equal(204);
      expect(s3.objects.has(key)).to.equal(false);
      expect(s3.requests.every((r) => r.signed)).to.equal(true);
    });
  });
});
