import { expect } from 'chai';
import { assetEnrichmentJob, assetImportJob } from '../../src/assets/jobs.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { expectAssetShape } from './helpers.ts';

describe('assets', () => {
  const ctx = useServer();
  let alice: TestUser;
  let org: string;

  before(async () => {
    alice = newUser();
    org = await createOrganization(ctx.server, alice);
  });

  const create = (body: Record<string, unknown>, user = alice) =>
    ctx.server.request('post', '/assets', { token: user.token, body: { organization_id: org, ...body } });
  const jobsFor = (queue: string, assetId: string) => ctx.db('pgboss.job').where({ name: queue }).whereRaw(`data->>'asset_id' = ?`, [assetId]).select('state');

  describe('POST /assets', () => {
    it('creates a text asset with every field of spec 2.2, records activity and enqueues enrichment in the same transaction', async () => {
      const res = await create({
        type: 'text',
        title: 'Notes',
        content: 'héllo world',
        mime_type: 'text/plain',
        metadata: { tags: ['a'] },
        visibility: 'workspace',
      });
      expect(res.status).to.equal(201);
      expectAssetShape(res.body);
      expect(res.body).to.deep.include({
        organization_id: org,
        created_by_id: alice.id,
        type: 'text',
        title: 'Notes',
        mime_type: 'text/plain',
        url: null,
        content: 'héllo world',
        upload_file_state: null,
        enrichment_state: 'pending',
        visibility: 'workspace',
        workspace_role: 'viewer',
        metadata: { tags: ['a'] },
        generation_id: null,
        origin_conversation_id: null,
        origin_canvas_id: null,
        mod_transcript_id: null,
        mod_asset_id: null,
        mod_source_id: null,
        dual_media_id: null,
        deleted_at: null,
        deleted_by_id: null,
      });
      expect(await ctx.db('activity_events').where({ subject_id: res.body.id }).pluck('action')).to.deep.equal(['asset.created']);
      expect(await jobsFor(assetEnrichmentJob.name, res.body.id)).to.have.length(1);
    });

    it('a pointer asset (url, no content) has nothing to enrich: ignored, no job; defaults are private/viewer', async () => {
      const res = await create({ type: 'image', url: 'https://cdn.example.com/cat.png' });
      expect(res.status).to.equal(201);
      expect(res.body).to.deep.include({
        url: 'https://cdn.example.com/cat.png',
        title: null,
        content: null,
        mime_type: null,
        metadata: null,
        enrichment_state: 'ignored',
        visibility: 'private',
        workspace_role: 'viewer',
      });
      expect(await jobsFor(assetEnrichmentJob.name, res.body.id)).to.have.length(0);
    });

    it('names the field and the rule for invalid bodies', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ type: 'hologram' }, 'type'],
        [{ type: 'image', url: 'ftp://example.com/x.png' }, 'url'],
        [{ type: 'image', mime_type: 'not a type' }, 'mime_type'],
        [{ type: 'image', visibility: 'public' }, 'visibility'],
        [{ type: 'image', project_id: 'nope' }, 'project_id'],
        [{ type: 'image', colour: 'red' }, ''],
      ];
      for (const [body, field] of cases) {
        const res = await create(body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body.code).to.equal('validation_failed');
        if (field) expect(res.body.data.issues[0].path).to.deep.equal([field]);
        else expect(res.body.message).to.match(/colour/);
      }
      const missing = await ctx.server.request('post', '/assets', { token: alice.token, body: { type: 'image' } });
      expect(missing.status).to.equal(400);
      expect(missing.body.data.issues[0].path).to.deep.equal(['organization_id']);
    });

    it('answers 403 to a non-member (spec §4.1: no 404 on a create) and 401 without a token, writing nothing', async () => {
      const before = await ctx.db('assets').count<{ count: number }[]>('* as count');
      const outsider = await create({ type: 'image' }, newUser());
      expect(outsider.status).to.equal(403);
      expect(outsider.body).to.deep.equal({ code: 'forbidden', message: `you are not a member of organization "${org}"`, data: { issues: [] } });
      expect((await ctx.server.request('post', '/assets', { body: { organization_id: org, type: 'image' } })).status).to.equal(401);
      expect((await ctx.db('assets').count<{ count: number }[]>('* as count'))[0]!.count).to.equal(before[0]!.count);
    });
  });

  describe('GET/PATCH/DELETE /assets/{asset_id} and restore', () => {
    it('reads, updates (sparse), soft-deletes (204), hides from lists, restores (200), with activity for each change', async () => {
      const created = (await create({ type: 'document', title: 'Draft', metadata: 'free text' })).body;
      const got = await ctx.server.request('get', `/assets/${created.id}`, { token: alice.token });
      expect(got.status).to.equal(200);
      expect(got.body).to.deep.equal(created);

      const patched = await ctx.server.request('patch', `/assets/${created.id}`, { token: alice.token, body: { title: 'Final', metadata: { v: 2 } } });
      expect(patched.status).to.equal(200);
      expectAssetShape(patched.body);
      expect(patched.body).to.deep.include({ title: 'Final', metadata: { v: 2 }, mime_type: null, content: null });
      expect(patched.body.updated_at > created.updated_at).to.equal(true);

      const cleared = await ctx.server.request('patch', `/assets/${created.id}`, { token: alice.token, body: { title: null } });
      expect(cleared.body.title).to.equal(null);

      const deleted = await ctx.server.request('delete', `/assets/${created.id}`, { token: alice.token });
      expect(deleted.status).to.equal(204);
      expect(deleted.body).to.equal(undefined);
      const afterDelete = await ctx.server.request('get', `/assets/${created.id}`, { token: alice.token });
      expect(afterDelete.status).to.equal(200);
      expect(afterDelete.body.deleted_by_id).to.equal(alice.id);
      expect(afterDelete.body.deleted_at).to.be.a('string');
      const live = await ctx.server.request('get', '/assets', { token: alice.token, query: { organization_id: org, limit: 100 } });
      expect(live.body.items.map((a: { id: string }) => a.id)).to.not.include(created.id);
      const trash = await ctx.server.request('get', '/assets', { token: alice.token, query: { organization_id: org, deleted: 'true' } });
      expect(trash.body.items.map((a: { id: string }) => a.id)).to.include(created.id);

      const editDeleted = await ctx.server.request('patch', `/assets/${created.id}`, { token: alice.token, body: { title: 'x' } });
      expect(editDeleted.status).to.equal(409);
      expect(editDeleted.body.code).to.equal('conflict');
      expect((await ctx.server.request('delete', `/assets/${created.id}`, { token: alice.token })).status).to.equal(204);

      const restored = await ctx.server.request('post', `/assets/${created.id}/restore`, { token: alice.token });
      expect(restored.status).to.equal(200);
      expectAssetShape(restored.body);
      expect(restored.body).to.deep.include({ deleted_at: null, deleted_by_id: null, title: null });
      const again = await ctx.server.request('post', `/assets/${created.id}/restore`, { token: alice.token });
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal(restored.body);

      expect(await ctx.db('activity_events').where({ subject_id: created.id }).orderBy('created_at').pluck('action')).to.deep.equal([
        'asset.created',
        'asset.updated',
        'asset.updated',
        'asset.deleted',
        'asset.restored',
      ]);
    });

    it('changing content re-enriches in the same transaction', async () => {
      const created = (await create({ type: 'image' })).body;
      const patched = await ctx.server.request('patch', `/assets/${created.id}`, { token: alice.token, body: { content: 'alt text' } });
      expect(patched.body.enrichment_state).to.equal('pending');
      expect(await jobsFor(assetEnrichmentJob.name, created.id)).to.have.length(1);
    });

    it('validates the path id and the body', async () => {
      const badId = await ctx.server.request('get', '/assets/not-a-uuid', { token: alice.token });
      expect(badId.status).to.equal(400);
      expect(badId.body.data.issues[0].path).to.deep.equal(['asset_id']);
      const created = (await create({ type: 'image' })).body;
      const empty = await ctx.server.request('patch', `/assets/${created.id}`, { token: alice.token, body: {} });
      expect(empty.status).to.equal(400);
      expect(empty.body.message).to.match(/at least one/);
      const unknown = await ctx.server.request('patch', `/assets/${created.id}`, { token: alice.token, body: { visibility: 'workspace' } });
      expect(unknown.status).to.equal(400);
      expect(unknown.body.message).to.match(/visibility/);
      const restoreBody = await ctx.server.request('post', `/assets/${created.id}/restore`, { token: alice.token, body: { x: 1 } });
      expect(restoreBody.status).to.equal(400);
    });

    it('answers 404 with the same body for a missing asset and one the caller cannot read', async () => {
      const created = (await create({ type: 'image' })).body;
      const mallory = newUser();
      const missing = await ctx.server.request('get', '/assets/00000000-0000-4000-8000-000000000000', { token: alice.token });
      expect(missing.status).to.equal(404);
      for (const [method, path] of [
        ['get', ''],
        ['patch', ''],
        ['delete', ''],
        ['post', '/restore'],
        ['get', '/projects'],
        ['get', '/imported-parameters'],
        ['get', '/voices'],
        ['post', '/prompt'],
        ['get', '/file'],
      ] as const) {
        const res = await ctx.server.request(method, `/assets/${created.id}${path}`, {
          token: mallory.token,
          ...(method === 'patch' && { body: { title: 'x' } }),
        });
        expect(res.status, `${method} ${path}`).to.equal(404);
        expect(res.body, `${method} ${path}`).to.deep.equal(missing.body);
      }
    });
  });

  describe('GET /assets', () => {
    it('pages newest first with a stable keyset cursor and applies every filter', async () => {
      const orgId = await createOrganization(ctx.server, alice);
      const bob = newUser();
      await addMember(ctx.db, orgId, bob);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await ctx.server.request('post', '/assets', {
          token: alice.token,
          body: { organization_id: orgId, type: i % 2 ? 'image' : 'text', title: `Item ${i}${i === 3 ? ' sunrise' : ''}` },
        });
        ids.push(res.body.id);
      }
      const bobs = await ctx.server.request('post', '/assets', {
        token: bob.token,
        body: { organization_id: orgId, type: 'audio', content: 'Sunrise over the bay', visibility: 'workspace' },
      });
      const list = (query: Record<string, string | number>) =>
        ctx.server.request('get', '/assets', { token: alice.token, query: { organization_id: orgId, ...query } });

      const first = await list({ limit: 4 });
      expect(first.status).to.equal(200);
      expect(Object.keys(first.body).sort()).to.deep.equal(['items', 'next_cursor']);
      first.body.items.forEach(expectAssetShape);
      // A new asset between pages must not shift the second page.
      await ctx.server.request('post', '/assets', { token: alice.token, body: { organization_id: orgId, type: 'text' } });
      const second = await list({ limit: 4, cursor: first.body.next_cursor });
      expect(second.body.next_cursor).to.equal(null);
      expect([...first.body.items, ...second.body.items].map((a: { id: string }) => a.id)).to.deep.equal([bobs.body.id, ...ids.slice().reverse()]);

      expect((await list({ type: 'image' })).body.items.map((a: { id: string }) => a.id)).to.deep.equal([ids[3], ids[1]]);
      expect((await list({ created_by: bob.id })).body.items.map((a: { id: string }) => a.id)).to.deep.equal([bobs.body.id]);
      expect((await list({ search: 'SUNRISE' })).body.items.map((a: { id: string }) => a.id)).to.deep.equal([bobs.body.id, ids[3]]);
      expect((await list({ search: '100%' })).body.items).to.deep.equal([]);

      const bad = await list({ type: 'hologram' });
      expect(bad.status).to.equal(400);
      expect(bad.body.data.issues[0].path).to.deep.equal(['type']);
      expect((await list({ limit: 0 })).status).to.equal(400);
      expect((await list({ cursor: 'garbage' })).status).to.equal(400);
      expect((await ctx.server.request('get', '/assets', { token: alice.token })).status).to.equal(400);
      const outsider = await ctx.server.request('get', '/assets', { token: newUser().token, query: { organization_id: orgId } });
      expect(outsider.status).to.equal(200);
      expect(outsider.body).to.deep.equal({ items: [], next_cursor: null });
    });
  });

  describe('POST /assets/imports/link (request side)', () => {
    it('creates the asset in_progress with a job in the same transaction, and records the import parameters', async () => {
      const res = await ctx.server.request('post', '/assets/imports/link', {
        token: alice.token,
        body: { organization_id: org, url: 'https://media.example.test/photos/cat.png' },
      });
      expect(res.status).to.equal(201);
      expectAssetShape(res.body);
      expect(res.body).to.deep.include({
        type: 'image',
        title: null,
        url: null,
        mime_type: null,
        upload_file_state: 'in_progress',
        enrichment_state: null,
        created_by_id: alice.id,
        visibility: 'private',
      });
      expect(await jobsFor(assetImportJob.name, res.body.id)).to.have.length(1);
      expect(await ctx.db('activity_events').where({ subject_id: res.body.id }).pluck('action')).to.deep.equal(['asset.import_started']);
      const params = await ctx.server.request('get', `/assets/${res.body.id}/imported-parameters`, { token: alice.token });
      expect(params.status).to.equal(200);
      expect(params.body).to.deep.equal({
        asset_id: res.body.id,
        source_url: 'https://media.example.test/photos/cat.png',
        final_url: null,
        redirects: [],
        content_type: null,
        size: null,
        imported_at: null,
        state: 'in_progress',
        error: null,
      });
    });

    it('refuses non-http URLs and unknown fields up front; 403 for non-members', async () => {
      for (const url of ['file:///etc/passwd', 'javascript:alert(1)', 'not a url']) {
        const res = await ctx.server.request('post', '/assets/imports/link', { token: alice.token, body: { organization_id: org, url } });
        expect(res.status, url).to.equal(400);
        expect(res.body.data.issues[0].path).to.deep.equal(['url']);
      }
      expect(
        (
          await ctx.server.request('post', '/assets/imports/link', {
            token: alice.token,
            body: { organization_id: org, url: 'https://x.test/', type: 'image' },
          })
        ).status,
      ).to.equal(400);
      expect(
        (await ctx.server.request('post', '/assets/imports/link', { token: newUser().token, body: { organization_id: org, url: 'https://x.test/' } })).status,
      ).to.equal(403);
    });

    it('imported-parameters is 404 for an asset that was not imported', async () => {
      const created = (await create({ type: 'image' })).body;
      const res = await ctx.server.request('get', `/assets/${created.id}/imported-parameters`, { token: alice.token });
      expect(res.status).to.equal(404);
      expect(res.body.code).to.equal('not_found');
    });
  });

  describe('models, voices and prompts (sandbox provider)', () => {
    it('lists the sandbox models', async () => {
      const res = await ctx.server.request('get', '/assets/models', { token: alice.token });
      expect(res.status).to.equal(200);
      expect(res.body.sandbox).to.equal(true);
      expect(res.body.items.map((m: { id: string }) => m.id)).to.deep.equal(['sandbox-vision-1', 'sandbox-text-1', 'sandbox-audio-1']);
      expect(Object.keys(res.body.items[0]).sort()).to.deep.equal(['asset_types', 'capabilities', 'id', 'name']);
    });

    it('extracts a deterministic prompt that says it is a sandbox result', async () => {
      const created = (await create({ type: 'image', title: 'Red fox', mime_type: 'image/png' })).body;
      const one = await ctx.server.request('post', `/assets/${created.id}/prompt`, { token: alice.token, body: {} });
      const two = await ctx.server.request('post', `/assets/${created.id}/prompt`, { token: alice.token, body: {} });
      expect(one.status).to.equal(200);
      expect(one.body).to.deep.equal(two.body);
      expect(Object.keys(one.body).sort()).to.deep.equal(['asset_id', 'model', 'prompt', 'sandbox']);
      expect(one.body).to.include({ asset_id: created.id, model: 'sandbox-vision-1', sandbox: true });
      expect(one.body.prompt).to.match(/^\[sandbox result\] A image of "Red fox" \(image\/png\)/);
      const wrongModel = await ctx.server.request('post', `/assets/${created.id}/prompt`, { token: alice.token, body: { model: 'sandbox-audio-1' } });
      expect(wrongModel.status).to.equal(400);
      expect(wrongModel.body.data.issues[0].path).to.deep.equal(['model']);
      await ctx.server.request('delete', `/assets/${created.id}`, { token: alice.token });
      expect((await ctx.server.request('post', `/assets/${created.id}/prompt`, { token: alice.token, body: {} })).status).to.equal(409);
    });

    it('lists voices of audio assets and answers 409 for other types', async () => {
      const audio = (await create({ type: 'audio', title: 'Interview' })).body;
      const res = await ctx.server.request('get', `/assets/${audio.id}/voices`, { token: alice.token });
      expect(res.status).to.equal(200);
      expect(res.body.asset_id).to.equal(audio.id);
      expect(res.body.sandbox).to.equal(true);
      expect(res.body.items.length).to.be.within(1, 2);
      expect(res.body.items[0]).to.deep.equal({ id: 'sandbox-voice-1', name: 'Sandbox speaker 1', language: 'en', first_heard_at: 0 });
      const image = (await create({ type: 'image' })).body;
      const notAudio = await ctx.server.request('get', `/assets/${image.id}/voices`, { token: alice.token });
      expect(notAudio.status).to.equal(409);
      expect(notAudio.body.message).to.match(/audio/);
    });
  });
});
