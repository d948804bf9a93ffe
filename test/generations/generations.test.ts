import { createHash, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { assetEnrichmentJob } from '../../src/assets/jobs.ts';
import { assetThumbnailKey } from '../../src/assets/presenter.ts';
import { createStorage } from '../../src/providers/storage/index.ts';
import type { Db } from '../../src/db/knex.ts';
import { eventually } from '../jobs/support.ts';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { TestServer } from '../support/server.ts';
import { testConfig } from '../support/config.ts';
import { type Stack, startStack } from '../support/stack.ts';

/**
 * Generations end to end: a real web process and worker, the sandbox generation provider (real
 * PNG/WAV files), billing through metered calls. The sandbox spreads 1.5 s over its progress steps,
 * so a cancel lands mid-run.
 */
describe('generations (quote, hold, worker, assets, cancel)', function () {
  this.timeout(60_000);
  let stack: Stack;
  let server: TestServer;
  let db: Db;
  let alice: TestUser;
  let org: string;

  before(async () => {
    stack = await startStack({ GENERATION_SANDBOX_DELAY_MS: '1500', WORKER_POLL_INTERVAL_SECONDS: '0.5', STARTER_CREDITS: '0' });
    ({ server, db } = stack);
    alice = newUser();
    org = await createOrganization(server, alice);
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 100, description: 'Test credits' }));
  });
  after(() => stack?.stop());

  const create = (body: Record<string, unknown>, user = alice) =>
    server.request('post', '/generations', { token: user.token, body: { organization_id: org, ...body } });
  const finished = (id: string) =>
    eventually(`generation ${id} ended`, async () => {
      const res = await server.request('get', `/generations/${id}`, { token: alice.token });
      return ['succeeded', 'failed', 'canceled'].includes(res.body.generation?.status) ? res.body.generation : null;
    });
  const holdOf = async (id: string) => {
    const { call_id } = await db('generations').where({ id }).first('call_id');
    return db('credit_holds')
      .where({ run_id: `metered-call:${call_id}` })
      .first('status', 'amount', 'captured', 'released');
  };

  it('audio: the quote is the hold; the worker stores a real WAV as an asset and captures what the provider used', async () => {
    const quote = await server.request('post', '/generations/quote', {
      token: alice.token,
      body: { organization_id: org, kind: 'audio', prompt: 'A calm harbour at dawn', parameters: { duration_seconds: 3 } },
    });
    expect(quote.status).to.equal(200);
    expect(quote.body).to.deep.equal({ kind: 'audio', model: 'sandbox-audio', credits: 3, units: 3, unit: 'second', credits_per_unit: 1 });

    const conversation = await createConversation(server, alice, org, { title: 'Sounds' });
    const res = await create({
      kind: 'audio',
      prompt: 'A calm harbour at dawn',
      parameters: { duration_seconds: 3 },
      conversation_id: conversation.id,
      title: 'Harbour',
    });
    expect(res.status).to.equal(201);
    expect(res.body.generation).to.include({
      status: 'queued',
      kind: 'audio',
      model: 'sandbox-audio',
      quoted_credits: 3,
      title: 'Harbour',
      conversation_id: conversation.id,
    });
    expect(await holdOf(res.body.generation.id)).to.deep.equal({ status: 'held', amount: 3, captured: 0, released: 0 });

    const done = await finished(res.body.generation.id);
    expect(done).to.include({ status: 'succeeded', credits_charged: 3, sandbox: true, progress: 1, error: null });
    expect(done.asset_ids).to.have.length(1);
    expect(await holdOf(done.id)).to.deep.equal({ status: 'captured', amount: 3, captured: 3, released: 0 });
    const asset = await server.request('get', `/assets/${done.asset_ids[0]}`, { token: alice.token });
    expect(asset.status).to.equal(200);
    expect(asset.body).to.include({ type: 'audio', generation_id: done.id, origin_conversation_id: conversation.id, upload_file_state: 'success' });
    const file = await fetch(`${server.url}/assets/${done.asset_ids[0]}/file`, { headers: { authorization: `Bearer ${alice.token}` } });
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(bytes.subarray(0, 4).toString('latin1')).to.equal('RIFF');
    expect(bytes.subarray(8, 12).toString('latin1')).to.equal('WAVE');
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('image: a real PNG, filed into the generation’s project; failures release the hold and make no asset', async () => {
    const project = await server.request('post', '/projects', { token: alice.token, body: { organization_id: org, title: 'Kites' } });
    expect(project.status).to.equal(201);
    const image = await create({ kind: 'image', prompt: 'A red kite over green hills', project_id: project.body.id ?? project.body.project?.id });
    const done = await finished(image.body.generation.id);
    expect(done).to.include({ status: 'succeeded', credits_charged: 4 });
    const filed = await db('project_items').where({ project_id: done.project_id, item_type: 'asset' }).pluck('item_id');
    expect(filed).to.deep.equal(done.asset_ids);
    const file = await fetch(`${server.url}/assets/${done.asset_ids[0]}/file`, { headers: { authorization: `Bearer ${alice.token}` } });
    expect(Buffer.from(await file.arrayBuffer()).subarray(0, 8)).to.deep.equal(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

    const failing = await create({ kind: 'text', prompt: 'sandbox-fail' });
    const failed = await finished(failing.body.generation.id);
    expect(failed).to.deep.include({ status: 'failed', credits_charged: 0, asset_ids: [] });
    expect(failed.error.code).to.equal('failed');
    expect(await holdOf(failed.id)).to.include({ status: 'released', captured: 0 });
    // Work that failed for good is a failed job (dead-lettered), never a completed one.
    const failedJob = await db('pgboss.job').where({ name: 'generation.run.v1' }).whereRaw(`data->>'generation_id' = ?`, [failed.id]).first('id', 'state');
    expect(failedJob.state).to.equal('failed');
    expect(await db('pgboss.job').where({ name: 'generation.run.v1.dead', source_id: failedJob.id }).count('* as n').first()).to.deep.equal({ n: 1 });
    expect(await db('assets').where({ generation_id: failed.id })).to.have.length(0);
  });

  it('a generated asset is created enriched: its facts, thumbnails, extracted text and enrichment records, with no enrichment job', async () => {
    const image = await finished((await create({ kind: 'image', prompt: 'A yellow balloon' })).body.generation.id);
    const text = await finished((await create({ kind: 'text', prompt: 'Three words please' })).body.generation.id);
    expect(image.status).to.equal('succeeded');
    expect(text.status).to.equal('succeeded');
    const [imageId, textId] = [image.asset_ids[0] as string, text.asset_ids[0] as string];

    const asset = (await server.request('get', `/assets/${imageId}`, { token: alice.token })).body;
    const file = Buffer.from(
      await (await fetch(`${server.url}/assets/${imageId}/file`, { headers: { authorization: `Bearer ${alice.token}` } })).arrayBuffer(),
    );
    expect(asset).to.include({ enrichment_state: 'success', enrichment_error: null });
    // What the enrichment job measures of a stored PNG: size and checksum of the file, its dimensions, its thumbnails (not enlarged past its 64 px).
    expect(asset.enrichment).to.deep.equal({
      size: file.length,
      checksum: { algorithm: 'sha256', value: createHash('sha256').update(file).digest('hex') },
      media_type: 'image/png',
      width: 64,
      height: 64,
      image_format: 'png',
      orientation: 1,
      thumbnails: asset.enrichment.thumbnails,
    });
    expect(
      asset.enrichment.thumbnails.map((t: { size: number; width: number; height: number; path: string }) => [t.size, t.width, t.height, t.path]),
    ).to.deep.equal([
      [256, 64, 64, `/assets/${imageId}/thumbnails/256`],
      [1024, 64, 64, `/assets/${imageId}/thumbnails/1024`],
    ]);
    // A 64 px image is the same rendition at 256 and 1024 px: encoded and stored once, served for both.
    const served = [];
    for (const size of [256, 1024]) {
      const thumbnail = await fetch(`${server.url}/assets/${imageId}/thumbnails/${size}`, { headers: { authorization: `Bearer ${alice.token}` } });
      expect(thumbnail.status).to.equal(200);
      served.push(Buffer.from(await thumbnail.arrayBuffer()));
    }
    expect(served[0]!.length).to.equal(asset.enrichment.thumbnails[0].bytes);
    expect(served[1]!.equals(served[0]!)).to.equal(true);
    const storage = createStorage(testConfig());
    expect((await storage.get(assetThumbnailKey(asset.organization_id, imageId, 256)))?.body.equals(served[0]!)).to.equal(true);
    expect(await storage.get(assetThumbnailKey(asset.organization_id, imageId, 1024))).to.equal(null);

    // A text generation's text is its asset's extracted text, as enrichment of a stored text file writes it.
    const textRow = await db('assets').where({ id: textId }).first('content', 'extracted_text', 'enrichment_state', 'enrichment');
    expect(textRow.enrichment_state).to.equal('success');
    expect(textRow.extracted_text).to.equal(textRow.content).and.to.be.a('string').that.is.not.empty;
    expect(textRow.enrichment).to.include({ media_type: 'text/plain; charset=utf-8', text_length: [...textRow.content].length });

    // Enrichment's records, once each: the activity and the event (with the asset as the API shows it); no job, no stage rows.
    for (const id of [imageId, textId]) {
      const activity = await db('activity_events').where({ subject_id: id }).orderBy('created_at').pluck('action');
      expect(activity).to.deep.equal(['asset.created', 'asset.enriched']);
      const events = await db('events').where({ subject_id: id }).select('type', 'data');
      expect(events.map((e) => e.type)).to.deep.equal(['asset.enriched']);
      expect(events[0].data.object).to.include({ id, enrichment_state: 'success' });
      expect(await db('pgboss.job').where({ name: assetEnrichmentJob.name }).whereRaw(`data->>'asset_id' = ?`, [id]).count('* as n').first()).to.deep.equal({
        n: 0,
      });
      expect(await db('asset_enrichment_stages').where({ asset_id: id })).to.have.length(0);
    }
  });

  it('cancel mid-run: 200 canceled, the hold released at once, the worker stops, no asset; a second cancel is 409', async () => {
    const res = await create({ kind: 'video', prompt: 'Waves on a pier', parameters: { frames: 6 } });
    const id = res.body.generation.id;
    await eventually('the generation is running', async () => (await db('generations').where({ id }).first('status')).status === 'running');
    const cancel = await server.request('patch', `/generations/${id}`, { token: alice.token, body: { status: 'canceled' } });
    expect(cancel.status).to.equal(200);
    expect(cancel.body.generation).to.deep.include({
      status: 'canceled',
      credits_charged: 0,
      asset_ids: [],
      error: { code: 'canceled', message: 'canceled by the caller' },
    });
    expect(await holdOf(id)).to.deep.equal({ status: 'released', amount: 6, captured: 0, released: 6 });
    // The job itself ended canceled in that transaction (never `completed`), and says why.
    const job = await db('pgboss.job').where({ name: 'generation.run.v1' }).whereRaw(`data->>'generation_id' = ?`, [id]).first('id', 'state');
    expect(job.state).to.equal('cancelled');
    expect(await db('job_ends').where({ job_id: job.id }).select('end', 'reason')).to.deep.equal([
      { end: 'canceled', reason: { code: 'canceled', message: 'canceled by the caller', redacted: false } },
    ]);
    expect(await db('assets').where({ generation_id: id })).to.have.length(0);
    const again = await server.request('patch', `/generations/${id}`, { token: alice.token, body: { status: 'canceled' } });
    expect(again.status).to.equal(409);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('who reads and changes it; refusals before anything is held', async () => {
    const bob = newUser();
    await addMember(db, org, bob);
    const mine = await create({ kind: 'text', prompt: 'A haiku about tea' });
    const shared = await createConversation(server, alice, org, { title: 'Team chat' });
    const opened = await server.request('patch', `/access/chat_conversation/${shared.id}`, { token: alice.token, body: { visibility: 'workspace' } });
    expect(opened.status).to.equal(200);
    const inChat = await create({ kind: 'text', prompt: 'A haiku about coffee', conversation_id: shared.id });
    // Bob reads the one made in a chat he can read, not Alice's private one; outsiders read nothing.
    expect((await server.request('get', `/generations/${mine.body.generation.id}`, { token: bob.token })).status).to.equal(404);
    expect((await server.request('get', `/generations/${inChat.body.generation.id}`, { token: bob.token })).status).to.equal(200);
    expect((await server.request('get', `/generations/${inChat.body.generation.id}`, { token: newUser().token })).status).to.equal(404);
    expect((await server.request('get', `/generations/${randomUUID()}`, { token: alice.token })).status).to.equal(404);
    const bobs = await server.request('get', '/generations', { token: bob.token, query: { organization_id: org, kind: 'text' } });
    expect(bobs.body.items.map((g: { id: string }) => g.id)).to.deep.equal([inChat.body.generation.id]);
    const rename = await server.request('patch', `/generations/${inChat.body.generation.id}`, { token: bob.token, body: { title: 'Mine now' } });
    expect(rename.status).to.equal(403);
    const inChatOnly = await server.request('get', '/generations', { token: alice.token, query: { organization_id: org, conversation_id: shared.id } });
    expect(inChatOnly.body.items.map((g: { id: string }) => g.id)).to.deep.equal([inChat.body.generation.id]);

    const holds = (await db('credit_holds').where({ organization_id: org })).length;
    for (const [body, path] of [
      [{ kind: 'image', prompt: 'x', model: 'sandbox-audio' }, ['model']],
      [{ kind: 'audio', prompt: 'x', parameters: { duration_seconds: 60 } }, ['parameters']],
      [{ kind: 'image', prompt: 'x', max_credits: 3 }, ['max_credits']],
      [{ kind: 'image', prompt: 'x', canvas_id: randomUUID() }, ['canvas_id']],
      [{ kind: 'image', prompt: 'x', surprise: 1 }, []],
    ] as const) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      if (path.length) expect(res.body.data.issues[0].path, JSON.stringify(body)).to.deep.equal(path);
    }
    const poor = await createOrganization(server, bob);
    const broke = await server.request('post', '/generations', { token: bob.token, body: { organization_id: poor, kind: 'image', prompt: 'x' } });
    expect(broke.status).to.equal(402);
    expect((await db('credit_holds').where({ organization_id: org })).length).to.equal(holds);
    expect(await db('generations').where({ organization_id: poor })).to.have.length(0);
    await finished(mine.body.generation.id);
    await finished(inChat.body.generation.id);
  });
});
