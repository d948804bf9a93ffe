import { expect } from 'chai';
import { cleanUpUploadsJob } from '../../src/assets/uploads/jobs.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { eventually } from '../support/eventually.ts';
import { createProject } from '../support/factories.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { createUploadFor, expectNoStagedBytes, startUploadStack, tusRequest, type UploadStack } from './support.ts';

/**
 * Issue 36: every upload request re-checks its creator. A member removed or demoted half-way
 * through an upload gets 404 for HEAD, PATCH and DELETE, and nothing they send lands; the cleanup
 * job terminates such an upload and removes its bytes.
 */
describe('asset uploads: the creator is checked at every request', function () {
  this.timeout(60_000);
  let stack: UploadStack;
  let alice: TestUser;
  let org: string;

  before(async () => {
    stack = await startUploadStack();
    alice = newUser();
    org = await createOrganization(stack.server, alice);
    const role = await stack.server.request('patch', `/organizations/${org}/roles`, {
      token: alice.token,
      body: { key: 'reader', name: 'Reader', permissions: ['members.view'] },
    });
    expect(role.status, JSON.stringify(role.body)).to.equal(200);
  });
  after(async () => stack?.stop());

  const uploadRow = (id: string) => stack.db('asset_uploads').where({ id }).first();
  const patch = (url: string, user: TestUser, offset: number, bytes: Buffer) =>
    tusRequest(url, 'PATCH', user.token, { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, bytes);

  /** Bob, a member, half-way through an upload. */
  async function halfWay() {
    const bob = newUser();
    await addMember(stack.db, org, bob, 'member');
    const bytes = Buffer.from('notes '.repeat(700));
    const res = await createUploadFor(stack.server, bob, { organization_id: org, filename: 'notes.txt', mime_type: 'text/plain', size: bytes.length });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const { asset, upload } = res.body as { asset: { id: string }; upload: { id: string; url: string } };
    expect((await patch(upload.url, bob, 0, bytes.subarray(0, 1000))).status).to.equal(204);
    return { bob, bytes, asset, upload };
  }

  async function refusedEverything(bob: TestUser, upload: { id: string; url: string }, bytes: Buffer, assetId: string) {
    for (const [method, headers, body] of [
      ['PATCH', { 'upload-offset': '1000', 'content-type': 'application/offset+octet-stream' }, bytes.subarray(1000)],
      ['HEAD', {}, undefined],
      ['DELETE', {}, undefined],
    ] as const) {
      const res = await tusRequest(upload.url, method, bob.token, headers, body);
      expect(res.status, method).to.equal(404);
      if (method !== 'HEAD') expect(res.body).to.deep.equal({ code: 'not_found', message: 'upload not found', data: { issues: [] } });
    }
    const got = await stack.server.request('get', `/asset-uploads/${upload.id}`, { token: bob.token });
    expect(got.status).to.equal(404);
    // Nothing landed: the upload still holds the first 1000 bytes, its asset is no file, no success event.
    expect((await uploadRow(upload.id)).state).to.equal('in_progress');
    expect((await stack.db('assets').where({ id: assetId }).first()).upload_file_state).to.equal('in_progress');
    expect(await stack.db('events').where({ organization_id: org, type: 'asset.upload.succeeded' }).whereRaw(`subject_id = ?`, [assetId])).to.deep.equal([]);
  }

  async function sweep() {
    const boss = createBoss(stack.databaseUrl, 'web');
    await boss.start();
    try {
      await stack.db.transaction((trx) => new JobQueue(boss).enqueue(trx, cleanUpUploadsJob, {}, { organizationId: null }));
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
  }

  async function terminatedBySweep(upload: { id: string }, assetId: string) {
    await sweep();
    await eventually('the cleanup job terminated the upload', async () => (await uploadRow(upload.id)).state === 'canceled');
    expect((await uploadRow(upload.id)).error).to.deep.equal({
      code: 'uploader_lost_access',
      message: 'the member who started the upload may no longer create assets in the organization (or file into its project)',
    });
    await eventually('its bytes were removed', async () => (await uploadRow(upload.id)).staging_removed_at !== null);
    expectNoStagedBytes(stack.config, upload.id);
    const asset = await stack.db('assets').where({ id: assetId }).first();
    expect(asset.upload_file_state).to.equal('error');
    expect(asset.import_error.code).to.equal('uploader_lost_access');
  }

  it('a member removed half-way: HEAD, PATCH and DELETE are 404, nothing lands, and the cleanup job ends the upload and removes its bytes', async () => {
    const { bob, bytes, asset, upload } = await halfWay();
    const removed = await stack.server.request('delete', `/organizations/${org}/members/${bob.id}`, { token: alice.token });
    expect(removed.status).to.equal(204);
    await refusedEverything(bob, upload, bytes, asset.id);
    await terminatedBySweep(upload, asset.id);
  });

  it('a member demoted to a role without resources.create half-way: the same', async () => {
    const { bob, bytes, asset, upload } = await halfWay();
    const demoted = await stack.server.request('patch', `/organizations/${org}/members/${bob.id}`, { token: alice.token, body: { role: 'reader' } });
    expect(demoted.status, JSON.stringify(demoted.body)).to.equal(200);
    await refusedEverything(bob, upload, bytes, asset.id);
    await terminatedBySweep(upload, asset.id);
  });

  it('a member whose project role drops to viewer half-way: the upload filed into it is 404 to them, nothing lands', async () => {
    const bob = newUser();
    await addMember(stack.db, org, bob, 'member');
    const project = await createProject(stack.server, alice, org, { title: 'Launch' });
    const granted = await stack.server.request('post', `/access/project/${project.id}/grants`, {
      token: alice.token,
      body: { user_id: bob.id, role: 'editor' },
    });
    expect(granted.status, JSON.stringify(granted.body)).to.equal(201);
    const bytes = Buffer.from('plans '.repeat(700));
    const res = await createUploadFor(stack.server, bob, {
      organization_id: org,
      filename: 'plans.txt',
      mime_type: 'text/plain',
      size: bytes.length,
      project_id: project.id,
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const { asset, upload } = res.body as { asset: { id: string }; upload: { id: string; url: string } };
    expect((await patch(upload.url, bob, 0, bytes.subarray(0, 1000))).status).to.equal(204);
    const grantId = granted.body.grant?.id ?? granted.body.id;
    const lowered = await stack.server.request('patch', `/access/project/${project.id}/grants/${grantId}`, { token: alice.token, body: { role: 'viewer' } });
    expect(lowered.status, JSON.stringify(lowered.body)).to.equal(200);
    await refusedEverything(bob, upload, bytes, asset.id);
  });

  it('the cleanup job leaves the uploads of members who may still create alone', async () => {
    const { bob, bytes, upload } = await halfWay();
    await sweep();
    // The sweep ran (its job completed) and the upload goes on.
    await eventually(
      'the sweep completed',
      async () => (await stack.db('pgboss.job').where({ name: cleanUpUploadsJob.name }).whereIn('state', ['created', 'active', 'retry'])).length === 0,
    );
    expect((await uploadRow(upload.id)).state).to.equal('in_progress');
    expect((await patch(upload.url, bob, 1000, bytes.subarray(1000))).status).to.equal(204);
    expect((await uploadRow(upload.id)).state).to.equal('completed');
  });
});
