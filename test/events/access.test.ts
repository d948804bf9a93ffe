import { expect } from 'chai';
import { recordEvent } from '../../src/core/events.ts';
import type { Db } from '../../src/db/knex.ts';
import { eventually } from '../support/eventually.ts';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { TestServer } from '../support/server.ts';
import { follow } from '../support/sse.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';
import { awaitEvent, eventsSeenBy } from './support.ts';

/**
 * An event about a resource reaches only members who can read that resource (the access predicate
 * of lists, decided when listed or sent); one about the organization only members holding the
 * permission its type names. Checked on the list and on the stream, from real API actions.
 */
describe('events: access', function () {
  this.timeout(120_000);
  let stack: Stack;
  let server: TestServer;
  let db: Db;
  let upstream: FakeUpstream;
  let owner: TestUser;
  let member: TestUser;
  let admin: TestUser;
  let org: string;

  before(async () => {
    upstream = await startUpstream({
      '/private.txt': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('for the owner only');
      },
    });
    stack = await startStack({ OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`, WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    ({ server, db } = stack);
    owner = newUser();
    member = newUser();
    admin = newUser();
    org = await createOrganization(server, owner);
    await addMember(db, org, member, 'member');
    await addMember(db, org, admin, 'admin');
  });
  after(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  async function answeredRun(visibility: 'private' | 'workspace') {
    const conversation = await createConversation(server, owner, org, { title: `A ${visibility} chat`, visibility });
    expect((await server.request('post', `/conversations/${conversation.id}/messages`, { token: owner.token, body: { content: 'Hello?' } })).status).to.equal(
      201,
    );
    const run = await server.request('post', `/conversations/${conversation.id}/run`, { token: owner.token, body: { max_credits: 40 } });
    expect(run.status).to.equal(201);
    await awaitEvent(server, owner, org, 'conversation.run.succeeded', (e) => e.data.object.id === run.body.run.id);
    return { conversationId: conversation.id as string, runId: run.body.run.id as string };
  }

  it('a private resource’s events reach neither the list nor the stream of a member who cannot read it; owners, admins and readers get them', async () => {
    const memberStream = await follow(server.url, `/organizations/${org}/events/stream`, member.token);
    const ownerStream = await follow(server.url, `/organizations/${org}/events/stream`, owner.token);
    const adminStream = await follow(server.url, `/organizations/${org}/events/stream`, admin.token);
    try {
      for (const f of [memberStream, ownerStream, adminStream]) expect(f.res.status).to.equal(200);
      const hidden = await answeredRun('private');
      const shared = await answeredRun('workspace');
      // A generation made outside any chat or canvas: its creator's (and the admins') only.
      const generation = await server.request('post', '/generations', {
        token: owner.token,
        body: { organization_id: org, kind: 'image', prompt: 'A private sketch' },
      });
      expect(generation.status).to.equal(201);
      const made = await awaitEvent(server, owner, org, 'generation.succeeded', (e) => e.data.object.id === generation.body.generation.id);
      // A link import (private by default).
      const imported = await server.request('post', '/assets/imports/link', {
        token: owner.token,
        body: { organization_id: org, url: `${upstream.url}/private.txt` },
      });
      const asset = await awaitEvent(server, owner, org, 'asset.import.succeeded', (e) => e.data.object.id === imported.body.id);
      const enriched = await awaitEvent(server, owner, org, 'asset.enriched', (e) => e.data.object.id === imported.body.id);
      // About the organization: billing needs billing.view (owners and admins), credits credits.view (every member).
      const billing = await db.transaction((trx) =>
        recordEvent(trx, { organizationId: org, type: 'billing.subscription.updated', subject: null, object: { organization_id: org } }),
      );
      const sentinel = await db.transaction((trx) => recordEvent(trx, { organizationId: org, type: 'credits.low_balance', subject: null, object: { n: 1 } }));

      const runEvent = async (runId: string) =>
        (await eventsSeenBy(server, owner, org, { type: 'conversation.run.succeeded' })).find((e) => e.data.object.id === runId)!;
      const hiddenRun = await runEvent(hidden.runId);
      const sharedRun = await runEvent(shared.runId);
      const everything = [hiddenRun.id, sharedRun.id, made.id, asset.id, enriched.id, billing.id, sentinel.id];

      for (const f of [memberStream, ownerStream, adminStream])
        await eventually('the stream reached the sentinel', async () => f.events.some((e) => e.id === sentinel.id));
      const ids = (events: { id?: string }[]) => events.map((e) => e.id).filter((id) => everything.includes(id!));
      expect(ids(memberStream.events).sort()).to.deep.equal([sharedRun.id, sentinel.id].sort());
      expect(ids(ownerStream.events).sort()).to.deep.equal([...everything].sort());
      expect(ids(adminStream.events).sort()).to.deep.equal([...everything].sort());

      const listed = async (user: TestUser) => ids(await eventsSeenBy(server, user, org)).sort();
      expect(await listed(member)).to.deep.equal([sharedRun.id, sentinel.id].sort());
      expect(await listed(owner)).to.deep.equal([...everything].sort());
      expect(await listed(admin)).to.deep.equal([...everything].sort());

      // Access is decided when listed: shared with the member now, the private chat's event appears.
      const granted = await server.request('post', `/access/chat_conversation/${hidden.conversationId}/grants`, {
        token: owner.token,
        body: { user_id: member.id, role: 'viewer' },
      });
      expect(granted.status, JSON.stringify(granted.body)).to.equal(201);
      expect(await listed(member)).to.deep.equal([hiddenRun.id, sharedRun.id, sentinel.id].sort());
    } finally {
      for (const f of [memberStream, ownerStream, adminStream]) f.hangUp();
    }
  });

  it('members.view events reach members; a non-member gets 404 for list and stream', async () => {
    const stranger = newUser();
    expect((await server.request('get', `/organizations/${org}/events`, { token: stranger.token })).status).to.equal(404);
    expect((await server.request('get', `/organizations/${org}/events/stream`, { token: stranger.token })).status).to.equal(404);
    const added = (await eventsSeenBy(server, member, org, { type: 'member.added' })).map((e) => e.data.object.user_id);
    expect(added).to.deep.equal([owner.id]);
  });
});
