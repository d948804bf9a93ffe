import { expect } from 'chai';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { png } from '../assets/helpers.ts';
import { createUploadFor, noise, sha256, startUploadStack, tusSend, type UploadStack } from './support.ts';

/** Downloads of stored files: Range and ETag on GET /file, and short-lived signed URLs served by the API (local storage). */
describe('asset downloads (Range, ETag, signed URLs)', function () {
  this.timeout(60_000);
  let stack: UploadStack;
  let alice: TestUser;
  let org: string;

  before(async () => {
    stack = await startUploadStack();
    alice = newUser();
    org = await createOrganization(stack.server, alice);
  });
  after(async () => stack?.stop());

  const uploaded = async (bytes: Buffer, filename: string, mime_type: string) => {
    const res = await createUploadFor(stack.server, alice, { organization_id: org, filename, mime_type, size: bytes.length });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    await tusSend(res.body.upload.url, alice.token, bytes);
    return res.body.asset.id as string;
  };
  const file = (id: string, headers: Record<string, string> = {}, token = alice.token) =>
    fetch(`${stack.server.url}/assets/${id}/file`, { headers: { authorization: `Bearer ${token}`, ...headers } });
  const downloadUrl = (id: string, body: Record<string, unknown> = {}, token = alice.token) =>
    stack.server.request('post', `/assets/${id}/download-url`, { token, body });

  it('serves ranges (206), suffix ranges, refuses one outside the file (416, JSON), and answers If-None-Match with 304', async () => {
    const bytes = Buffer.concat([png(2, 2), noise(10_000)]).subarray(0, 10_000);
    const id = await uploaded(bytes, 'photo.png', 'image/png');
    const whole = await file(id);
    expect(whole.status).to.equal(200);
    expect(whole.headers.get('etag')).to.equal(`"${sha256(bytes)}"`);
    expect(whole.headers.get('accept-ranges')).to.equal('bytes');
    expect(whole.headers.get('content-length')).to.equal('10000');
    expect(whole.headers.get('content-disposition')).to.equal(`inline; filename="photo.png"; filename*=UTF-8''photo.png`);
    expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).to.equal(true);

    const part = await file(id, { range: 'bytes=100-199' });
    expect(part.status).to.equal(206);
    expect(part.headers.get('content-range')).to.equal('bytes 100-199/10000');
    expect(part.headers.get('content-length')).to.equal('100');
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(100, 200))).to.equal(true);

    const tail = await file(id, { range: 'bytes=-10' });
    expect(tail.status).to.equal(206);
    expect(tail.headers.get('content-range')).to.equal('bytes 9990-9999/10000');
    expect(Buffer.from(await tail.arrayBuffer()).equals(bytes.subarray(9990))).to.equal(true);

    const outside = await file(id, { range: 'bytes=10000-' });
    expect(outside.status).to.equal(416);
    expect(outside.headers.get('content-range')).to.equal('bytes */10000');
    expect(((await outside.json()) as { code: string }).code).to.equal('validation_failed');

    const cached = await file(id, { 'if-none-match': `"${sha256(bytes)}"` });
    expect(cached.status).to.equal(304);
    expect(await cached.text()).to.equal('');
    // An If-Range that no longer matches gets the whole file.
    const stale = await file(id, { range: 'bytes=0-9', 'if-range': '"something-else"' });
    expect(stale.status).to.equal(200);
    expect((await stale.arrayBuffer()).byteLength).to.equal(10_000);
  });

  it('hands out a signed URL that works without a token, ranges included, and fails once tampered with or expired', async () => {
    const bytes = Buffer.from('take one\n'.repeat(500));
    const id = await uploaded(bytes, 'take.txt', 'text/plain');
    const res = await downloadUrl(id, { disposition: 'attachment' });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(Object.keys(res.body).sort()).to.deep.equal(['expires_at', 'url']);
    const expiresIn = (Date.parse(res.body.expires_at) - Date.now()) / 1000;
    expect(expiresIn).to.be.within(290, 301);
    const url = new URL(res.body.url);
    expect(url.pathname).to.equal(`/asset-files/${id}`);
    const got = await fetch(url);
    expect(got.status).to.equal(200);
    expect(got.headers.get('content-disposition')).to.match(/^attachment; filename="take.txt"/);
    expect(got.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).to.equal(true);
    const ranged = await fetch(url, { headers: { range: 'bytes=0-3' } });
    expect(ranged.status).to.equal(206);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(bytes.subarray(0, 4))).to.equal(true);

    for (const [name, value] of [
      ['expires', String(Number(url.searchParams.get('expires')) + 3600)],
      ['disposition', 'inline'],
      ['user', alice.id === 'x' ? 'y' : 'x'],
      // Flip the last character, whatever it is (replacing it with a fixed one left it unchanged 1 time in 64).
      ['signature', flipLast(url.searchParams.get('signature')!)],
    ] as const) {
      const tampered = new URL(url);
      tampered.searchParams.set(name, value);
      const refused = await fetch(tampered);
      expect(refused.status, name).to.equal(404);
      expect(((await refused.json()) as { code: string }).code).to.equal('not_found');
    }
    // `expires` is required by the document and by the server alike: absent or not unix seconds, the parameter's 400.
    for (const value of [null, 'soon', '1.5']) {
      const broken = new URL(url);
      if (value === null) broken.searchParams.delete('expires');
      else broken.searchParams.set('expires', value);
      const refused = await fetch(broken);
      expect(refused.status, String(value)).to.equal(400);
      const body = (await refused.json()) as { code: string; data: { issues: { path: string[] }[] } };
      expect(body.code).to.equal('validation_failed');
      expect(body.data.issues.map((issue) => issue.path)).to.deep.equal([['expires']]);
    }

    const short = await downloadUrl(id, { expires_in: 1 });
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect((await fetch(short.body.url)).status).to.equal(404);
    expect((await downloadUrl(id, { expires_in: 3601 })).status).to.equal(400);
  });

  it('a revoked grant and a deleted asset make URLs fail at once, and new ones are refused', async () => {
    const bob = newUser();
    await addMember(stack.db, org, bob, 'member');
    const id = await uploaded(Buffer.from('a memo'), 'memo.txt', 'text/plain');
    const grant = await stack.server.request('post', `/access/asset/${id}/grants`, { token: alice.token, body: { user_id: bob.id, role: 'viewer' } });
    expect(grant.status, JSON.stringify(grant.body)).to.equal(201);
    const bobs = await downloadUrl(id, {}, bob.token);
    expect(bobs.status).to.equal(200);
    expect((await fetch(bobs.body.url)).status).to.equal(200);
    expect((await stack.server.request('delete', `/access/asset/${id}/grants/${grant.body.id}`, { token: alice.token })).status).to.equal(204);
    expect((await fetch(bobs.body.url)).status).to.equal(404);
    expect((await downloadUrl(id, {}, bob.token)).status).to.equal(404);

    const alices = await downloadUrl(id);
    expect((await fetch(alices.body.url)).status).to.equal(200);
    expect((await stack.server.request('delete', `/assets/${id}`, { token: alice.token })).status).to.equal(204);
    expect((await fetch(alices.body.url)).status).to.equal(404);
    const refused = await downloadUrl(id);
    expect(refused.status).to.equal(409);
    expect(refused.body.code).to.equal('conflict');
  });

  it('serves HTML (and text that is not plain) only as an attachment with nosniff, even when inline is asked', async () => {
    const html = Buffer.from('<!doctype html><html><body><script>alert(1)</script></body></html>');
    const id = await uploaded(html, 'page.html', 'text/html');
    const direct = await file(id);
    expect(direct.headers.get('content-disposition')).to.match(/^attachment; /);
    expect(direct.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(direct.headers.get('content-security-policy')).to.equal("sandbox; default-src 'none'");
    const signed = await downloadUrl(id, { disposition: 'inline' });
    const got = await fetch(signed.body.url);
    expect(got.status).to.equal(200);
    expect(got.headers.get('content-disposition')).to.match(/^attachment; /);
    expect(got.headers.get('x-content-type-options')).to.equal('nosniff');

    // Text that is not plain (Markdown, CSV) is offered as a download too.
    const markdown = await uploaded(Buffer.from('# Title\n'), 'notes.md', 'text/markdown');
    expect((await file(markdown)).headers.get('content-disposition')).to.match(/^attachment; /);
  });

  // Issue 36: HTML declared as `video/x-foo` was kept and served inline as video/x-foo.
  it('a declared type the sniffer cannot confirm is kept as application/octet-stream and served only as an attachment', async () => {
    const html = Buffer.from('<!doctype html><html><body><script>alert(1)</script></body></html>');
    const id = await uploaded(html, 'clip.foo', 'video/x-foo');
    const asset = (await stack.server.request('get', `/assets/${id}`, { token: alice.token })).body;
    expect(asset).to.deep.include({ upload_file_state: 'success', mime_type: 'application/octet-stream' });
    const direct = await file(id);
    expect(direct.status).to.equal(200);
    expect(direct.headers.get('content-type')).to.equal('application/octet-stream');
    expect(direct.headers.get('content-disposition')).to.match(/^attachment; /);
    expect(Buffer.from(await direct.arrayBuffer())).to.deep.equal(html);
    const signed = await fetch((await downloadUrl(id, { disposition: 'inline' })).body.url);
    expect(signed.headers.get('content-type')).to.equal('application/octet-stream');
    expect(signed.headers.get('content-disposition')).to.match(/^attachment; /);
    // The claim is kept beside what was trusted.
    const uploadedEntry = await stack.db('activity_events').where({ action: 'asset.uploaded', subject_id: id }).first();
    expect(uploadedEntry.data).to.deep.include({ mime_type: 'application/octet-stream', declared_mime_type: 'video/x-foo' });
    // A type the sniffer confirms is kept as declared.
    const picture = await uploaded(png(8, 8), 'dot.png', 'image/png');
    expect((await stack.server.request('get', `/assets/${picture}`, { token: alice.token })).body.mime_type).to.equal('image/png');
    expect((await file(picture)).headers.get('content-disposition')).to.match(/^inline/);
  });
});

function flipLast(signature: string): string {
  return `${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`;
}
