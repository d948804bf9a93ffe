import { expect } from 'chai';
import { pngClaiming } from '../assets/helpers.ts';
import { newUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';
import { draftListing, expectError, publishedListing, show } from './helpers.ts';

const ONE_PIXEL_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII=';

describe('skill listing covers', () => {
  const ctx = useServer();

  it('a real 1×1 PNG is stored and served at cover_url (to any reader once published); DELETE clears it', async () => {
    const alice = newUser();
    const bob = newUser();
    const { listing } = await publishedListing(ctx.server, alice);
    const res = await ctx.server.request('post', `/skill-listings/${listing.id}/cover`, {
      token: alice.token,
      body: { content_type: 'image/png', data: ONE_PIXEL_PNG },
    });
    expect(res.status, show(res)).to.equal(200);
    const url: string = res.body.listing.cover_url;
    expect(url).to.match(new RegExp(`^/skill-listings/${listing.id}/cover\\?v=\\d+$`));
    const image = await fetch(new URL(url, ctx.server.url), { headers: { authorization: `Bearer ${bob.token}` } });
    expect(image.status).to.equal(200);
    expect(image.headers.get('content-type')).to.equal('image/png');
    expect(Buffer.from(await image.arrayBuffer()).equals(Buffer.from(ONE_PIXEL_PNG, 'base64'))).to.equal(true);

    expectError(await ctx.server.request('delete', `/skill-listings/${listing.id}/cover`, { token: bob.token }), 403, 'forbidden');
    const removed = await ctx.server.request('delete', `/skill-listings/${listing.id}/cover`, { token: alice.token });
    expect(removed.status, show(removed)).to.equal(204);
    const after = await ctx.server.request('get', `/skill-listings/${listing.id}`, { token: alice.token });
    expect(after.body.listing.cover_url).to.equal(null);
    expectError(await ctx.server.request('get', `/skill-listings/${listing.id}/cover`, { token: alice.token }), 404, 'not_found');
  });

  it('refuses a text file, bytes of another type and an oversize image (naming data); a draft’s cover is 404 to others', async () => {
    const alice = newUser();
    const { listing } = await draftListing(ctx.server, alice);
    const put = (content_type: string, data: string, token = alice.token) =>
      ctx.server.request('post', `/skill-listings/${listing.id}/cover`, { token, body: { content_type, data } });
    expectError(await put('image/png', Buffer.from('just some text, not an image').toString('base64')), 400, 'validation_failed', 'data');
    expectError(await put('image/jpeg', ONE_PIXEL_PNG), 400, 'validation_failed', 'data');
    const oversize = Buffer.concat([Buffer.from(ONE_PIXEL_PNG, 'base64'), Buffer.alloc(1024 * 1024)]);
    expectError(await put('image/png', oversize.toString('base64')), 413, 'validation_failed', 'data');
    expectError(await put('text/plain', ONE_PIXEL_PNG), 400, 'validation_failed', 'content_type');
    expect((await ctx.server.request('get', `/skill-listings/${listing.id}`, { token: alice.token })).body.listing.cover_url).to.equal(null);
    expect((await put('image/png', ONE_PIXEL_PNG)).status).to.equal(200);
    const bob = newUser();
    expectError(await ctx.server.request('get', `/skill-listings/${listing.id}/cover`, { token: bob.token }), 404, 'not_found');
    expectError(await put('image/png', ONE_PIXEL_PNG, bob.token), 404, 'not_found');
  });

  it('refuses an image whose header claims more than 8192 pixels a side or 40 megapixels (400 naming data and the maximum), before decoding it', async () => {
    const alice = newUser();
    const { listing } = await draftListing(ctx.server, alice);
    const put = (data: Buffer) =>
      ctx.server.request('post', `/skill-listings/${listing.id}/cover`, {
        token: alice.token,
        body: { content_type: 'image/png', data: data.toString('base64') },
      });
    const rule = 'at most 8192 pixels wide and high and 40 megapixels in all';
    for (const [width, height] of [
      [100_000, 100_000],
      [8193, 1],
      [1, 8193],
      [8000, 5001],
    ] as const) {
      const res = await put(pngClaiming(width, height));
      expect(res.status, show(res)).to.equal(400);
      expect(res.body).to.deep.equal({
        code: 'validation_failed',
        message: `data: the image is ${width}×${height} pixels; it may be ${rule}`,
        data: { issues: [{ path: ['data'], message: rule }] },
      });
    }
    expect((await ctx.server.request('get', `/skill-listings/${listing.id}`, { token: alice.token })).body.listing.cover_url).to.equal(null);
    // At the limits: accepted (only the header is read, so a claimed size is as good as a real one here).
    expect((await put(pngClaiming(8000, 5000))).status).to.equal(200);
    expect((await put(pngClaiming(8192, 1))).status).to.equal(200);
  });
});
