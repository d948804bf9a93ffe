import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

describe('Idempotency-Key belongs to the caller who sent it', () => {
  const ctx = useServer();

  it("another member sending the same key and body makes a request of their own, never replaying the first one's response", async () => {
    const owner = newUser();
    const admin = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, admin, 'admin');
    const path = `/organizations/${org}/credits/adjustments`;
    const send = (token: string) =>
      ctx.server.request('post', path, { token, headers: { 'idempotency-key': 'shared-key-1' }, body: { amount: 5, reason: 'goodwill' } });

    const first = await send(owner.token);
    expect(first.status, JSON.stringify(first.body)).to.equal(201);
    const second = await send(admin.token);
    expect(second.status, JSON.stringify(second.body)).to.equal(201);
    expect(second.body.transactions.map((t: { id: string }) => t.id)).not.to.have.members(first.body.transactions.map((t: { id: string }) => t.id));

    // The sender's own retry still replays their response and writes nothing.
    const replay = await send(admin.token);
    expect(replay.status).to.equal(201);
    expect(replay.body).to.deep.equal(second.body);

    const adjustments = await ctx.db('activity_events').where({ organization_id: org, action: 'credits.adjusted' }).orderBy('created_at').pluck('actor_id');
    expect(adjustments).to.deep.equal([owner.id, admin.id]);
    expect(
      await ctx
        .db('idempotency_keys')
        .where({ organization_id: org, key_hash: createHash('sha256').update('shared-key-1').digest('hex') })
        .orderBy('user_id')
        .pluck('user_id'),
    ).to.deep.equal([owner.id, admin.id].sort());
  });
});
