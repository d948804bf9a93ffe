import { expect } from 'chai';
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { assetEnrichmentJob } from '../../src/assets/jobs.ts';
import { assetThumbnailKey } from '../../src/assets/presenter.ts';
import { createStorage } from '../../src/providers/storage/index.ts';
import { eventually } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';
import { docx, orientedJpeg, pdf, wav } from './fixtures.ts';
import { pngClaiming } from './helpers.ts';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const sha256 = (bytes: Buffer) => ({ algorithm: 'sha256', value: createHash('sha256').update(bytes).digest('hex') });

/**
 * Enrichment of real files, end to end: each fixture is imported from a fake upstream (a real
 * link import), a real worker enriches it, and the API shows exactly what was extracted.
 */
describe('enrichment of images, PDFs, DOCX, audio and text (worker)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let stack: Stack;
  let alice: TestUser;
  let org: string;
  const files: Record<string, { type: string; body: Buffer }> = {};

  before(async () => {
    files['/photo.jpg'] = { type: 'image/jpeg', body: await orientedJpeg(300, 200, 6) };
    files['/bomb.png'] = { type: 'image/png', body: pngClaiming(100_000, 100_000) };
    files['/report.pdf'] = { type: 'application/pdf', body: pdf(['Quarterly revenue grew', 'Lighthouse keepers (north coast)']) };
    files['/memo.docx'] = { type: DOCX, body: docx(['Budget memo for the harbour', 'Approved & signed']) };
    files['/tone.wav'] = { type: 'audio/wav', body: wav(1.5) };
    // "café\r\nnaïve\nend" in Windows-1252: not valid UTF-8.
    files['/legacy.txt'] = {
      type: 'text/plain',
      body: Buffer.from([...Buffer.from('caf'), 0xe9, 0x0d, 0x0a, ...Buffer.from('na'), 0xef, ...Buffer.from('ve\nend')]),
    };
    upstream = await startUpstream(
      Object.fromEntries(
        Object.entries(files).map(([path, file]) => [
          path,
          (_req: unknown, res: import('node:http').ServerResponse) => {
            res.writeHead(200, { 'content-type': file.type });
            res.end(file.body);
          },
        ]),
      ),
    );
    stack = await startStack({ OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}` });
    alice = newUser();
    org = await createOrganization(stack.server, alice);
  });
  after(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  /** Imports `path` and waits for its enrichment to end; the asset as the API shows it. */
  const enriched = async (path: string) => {
    const res = await stack.server.request('post', '/assets/imports/link', {
      token: alice.token,
      body: { organization_id: org, url: `${upstream.url}${path}` },
    });
    expect(res.status).to.equal(201);
    const id = res.body.id as string;
    await eventually(`enrichment of ${path} ended`, async () =>
      ['success', 'error'].includes((await stack.db('assets').where({ id }).first('enrichment_state')).enrichment_state),
    );
    return (await stack.server.request('get', `/assets/${id}`, { token: alice.token })).body;
  };
  const basics = (path: string) => ({ size: files[path]!.body.length, checksum: sha256(files[path]!.body), media_type: files[path]!.type });
  const extractedText = async (id: string) => (await stack.db('assets').where({ id }).first('extracted_text')).extracted_text;
  const search = async (q: string) => (await stack.server.request('get', '/assets', { token: alice.token, query: { organization_id: org, q } })).body;

  it('an EXIF-rotated JPEG: upright dimensions, its orientation, and 256/1024 px WebP thumbnails stored and served', async () => {
    const asset = await enriched('/photo.jpg');
    expect(asset.enrichment_state).to.equal('success');
    const thumbnails = asset.enrichment.thumbnails as { bytes: number }[];
    expect(asset.enrichment).to.deep.equal({
      ...basics('/photo.jpg'),
      // Stored 300×200, displayed rotated by 90°.
      width: 200,
      height: 300,
      image_format: 'jpeg',
      orientation: 6,
      thumbnails: [
        { size: 256, width: 171, height: 256, media_type: 'image/webp', bytes: thumbnails[0]!.bytes, path: `/assets/${asset.id}/thumbnails/256` },
        { size: 1024, width: 200, height: 300, media_type: 'image/webp', bytes: thumbnails[1]!.bytes, path: `/assets/${asset.id}/thumbnails/1024` },
      ],
    });
    for (const [i, size] of [256, 1024].entries()) {
      const res = await fetch(`${stack.server.url}/assets/${asset.id}/thumbnails/${size}`, { headers: { authorization: `Bearer ${alice.token}` } });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal('image/webp');
      expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
      const body = Buffer.from(await res.arrayBuffer());
      expect(body.length).to.equal(thumbnails[i]!.bytes);
      const meta = await sharp(body).metadata();
      // Upright: the rotation is in the pixels, no orientation tag left to apply.
      expect({ format: meta.format, width: meta.width, height: meta.height, orientation: meta.orientation }).to.deep.equal({
        format: 'webp',
        width: size === 256 ? 171 : 200,
        height: size === 256 ? 256 : 300,
        orientation: undefined,
      });
    }
    const stranger = newUser();
    await createOrganization(stack.server, stranger);
    expect((await stack.server.request('get', `/assets/${asset.id}/thumbnails/256`, { token: stranger.token })).status).to.equal(404);
    const badSize = await stack.server.request('get', `/assets/${asset.id}/thumbnails/512`, { token: alice.token });
    expect(badSize.status).to.equal(400);
    expect(badSize.body.data.issues[0].path).to.deep.equal(['size']);
    expect(await stack.db('asset_enrichment_stages').where({ asset_id: asset.id }).orderBy('stage').pluck('stage')).to.deep.equal(['image', 'thumbnails']);
  });

  it('a decompression bomb (a 1×1 PNG claiming 100,000×100,000 pixels) ends in error before any decode, no retry, no thumbnail', async () => {
    const asset = await enriched('/bomb.png');
    expect(asset).to.deep.include({ enrichment_state: 'error', enrichment: null });
    expect(asset.enrichment_error).to.deep.equal({
      code: 'image_too_large',
      message: 'the image is 100000×100000 (10000000000 pixels), more than the 100000000 allowed; it was not decoded',
    });
    const jobs = await stack
      .db('pgboss.job')
      .where({ name: assetEnrichmentJob.name })
      .whereRaw(`data->>'asset_id' = ?`, [asset.id])
      .select('state', 'retry_count');
    expect(jobs).to.deep.equal([{ state: 'failed', retry_count: 0 }]);
    expect(await createStorage(testConfig()).get(assetThumbnailKey(org, asset.id, 256))).to.equal(null);
    expect((await stack.server.request('get', `/assets/${asset.id}/thumbnails/256`, { token: alice.token })).status).to.equal(404);
  });

  it('a PDF: page count and the text of its pages, which search finds', async () => {
    const asset = await enriched('/report.pdf');
    const text = 'Quarterly revenue grew\nLighthouse keepers (north coast)';
    expect(asset.enrichment).to.deep.equal({ ...basics('/report.pdf'), page_count: 2, text_length: text.length });
    expect(await extractedText(asset.id)).to.equal(text);
    const found = await search('lighthouse keeper');
    expect(found.items.map((item: { id: string }) => item.id)).to.deep.equal([asset.id]);
    expect(found.items[0].search.snippet).to.equal('Quarterly revenue grew\n<mark>Lighthouse</mark> <mark>keepers</mark> (north coast');
  });

  it('a DOCX: its text, paragraphs separated by a blank line', async () => {
    const asset = await enriched('/memo.docx');
    const text = 'Budget memo for the harbour\n\nApproved & signed';
    expect(asset.enrichment).to.deep.equal({ ...basics('/memo.docx'), text_length: text.length });
    expect(await extractedText(asset.id)).to.equal(text);
    expect((await search('harbour budget')).items.map((item: { id: string }) => item.id)).to.deep.equal([asset.id]);
  });

  it('a WAV: duration, codec, bitrate, container, sample rate and channels', async () => {
    const asset = await enriched('/tone.wav');
    expect(asset.type).to.equal('audio');
    expect(asset.enrichment).to.deep.equal({
      ...basics('/tone.wav'),
      duration_seconds: 1.5,
      codec: 'PCM',
      bitrate: 8000 * 16,
      container: 'WAVE',
      sample_rate: 8000,
      channels: 1,
    });
    expect(await extractedText(asset.id)).to.equal(null);
  });

  it('a text file in Windows-1252: its encoding, lines and text', async () => {
    const asset = await enriched('/legacy.txt');
    expect(asset.enrichment).to.deep.equal({ ...basics('/legacy.txt'), encoding: 'windows-1252', line_count: 3, text_length: 15 });
    expect(await extractedText(asset.id)).to.equal('café\r\nnaïve\nend');
    expect((await search('naïve')).items.map((item: { id: string }) => item.id)).to.deep.equal([asset.id]);
  });

  it('inline text content: UTF-8, its lines, and the content itself is what search reads (not copied)', async () => {
    const res = await stack.server.request('post', '/assets', {
      token: alice.token,
      body: { organization_id: org, type: 'text', title: 'Poem', content: 'Über the moon\nand back\n' },
    });
    expect(res.status).to.equal(201);
    await eventually(async () => (await stack.db('assets').where({ id: res.body.id }).first('enrichment_state')).enrichment_state === 'success');
    const asset = (await stack.server.request('get', `/assets/${res.body.id}`, { token: alice.token })).body;
    const bytes = Buffer.from('Über the moon\nand back\n');
    expect(asset.enrichment).to.deep.equal({
      size: bytes.length,
      checksum: sha256(bytes),
      media_type: 'text/plain',
      encoding: 'utf-8',
      line_count: 2,
      text_length: 23,
    });
    expect(await extractedText(asset.id)).to.equal(null);
    expect((await search('moon')).items.map((item: { id: string }) => item.id)).to.deep.equal([asset.id]);
  });
});
