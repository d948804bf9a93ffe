import { expect } from 'chai';
import { addMember, createOrganization, newUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

/** GET /me and GET /organizations: a token holder finds who they are and which organizations exist for them. */
describe('who am I: GET /me, GET /organizations', () => {
  const ctx = useServer();

  it('GET /me: the user, each organization with role and permissions, the balance only where the role may see it', async () => {
    const alice = newUser({ email: 'alice@example.test', name: 'Alice' });
    const fresh = await ctx.server.request('get', '/me', { token: alice.token });
    expect(fresh.status).to.equal(200);
    expect(fresh.body.user).to.include({ id: alice.id, email: 'alice@example.test', name: 'Alice', operator: false });
    expect(fresh.body.user.created_at).to.be.a('string');
    expect(fresh.body.organizations).to.deep.equal([]);
    expect(fresh.body.more_organizations).to.equal(false);

    const owned = await createOrganization(ctx.server, alice, 'Beta Owned');
    const bob = newUser();
    const joined = await createOrganization(ctx.server, bob, 'Alpha Joined');
    await addMember(ctx.db, joined, alice, 'member');
    // A custom role without credits.view: no balance shown there.
    const third = await createOrganization(ctx.server, bob, 'Gamma Custom');
    const role = await ctx.server.request('patch', `/organizations/${third}/roles`, {
      token: bob.token,
      body: { key: 'reader', name: 'Reader', permissions: ['members.view'] },
    });
    expect(role.status, JSON.stringify(role.body)).to.equal(200);
    await addMember(ctx.db, third, alice, 'reader');

    const me = await ctx.server.request('get', '/me', { token: alice.token });
    expect(me.status).to.equal(200);
    const byName = me.body.organizations as { id: string; name: string; role: string; permissions: string[]; balance: number | null }[];
    expect(byName.map((o) => [o.name, o.role])).to.deep.equal([
      ['Alpha Joined', 'member'],
      ['Beta Owned', 'owner'],
      ['Gamma Custom', 'reader'],
    ]);
    const credits = await ctx.server.request('get', `/organizations/${owned}/credits`, { token: alice.token });
    expect(byName[1]).to.include({ id: owned, balance: credits.body.balance });
    expect(byName[1]!.permissions).to.include.members(['credits.view', 'members.manage']);
    expect(byName[0]!.permissions).to.include('credits.view').and.not.include('members.manage');
    expect(byName[0]!.balance).to.be.a('number');
    expect(byName[2]).to.include({ id: third, balance: null });
    expect(byName[2]!.permissions).to.deep.equal(['members.view']);
  });

  it('GET /organizations: only the caller’s, by name, keyset paged so each appears once', async () => {
    const carol = newUser();
    const names = ['Delta', 'Alpha', 'Echo', 'Charlie', 'Bravo'];
    const ids = new Map<string, string>();
    for (const name of names) ids.set(name, await createOrganization(ctx.server, carol, name));
    // Someone else's organization is not listed; a deleted one neither.
    await createOrganization(ctx.server, newUser(), 'Aardvark Elsewhere');
    expect((await ctx.server.request('delete', `/organizations/${ids.get('Echo')}`, { token: carol.token })).status).to.equal(204);

    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const res = await ctx.server.request('get', '/organizations', { token: carol.token, query: { limit: '2', ...(cursor && { cursor }) } });
      expect(res.status).to.equal(200);
      expect(res.body.items.length).to.be.at.most(2);
      for (const item of res.body.items) expect(item.role).to.equal('owner');
      seen.push(...res.body.items.map((o: { name: string }) => o.name));
      if (page === 0) await createOrganization(ctx.server, carol, 'Zulu Late');
      cursor = res.body.next_cursor ?? undefined;
      if (!cursor) break;
    }
    expect(seen).to.deep.equal(['Alpha', 'Bravo', 'Charlie', 'Delta', 'Zulu Late']);
    const bad = await ctx.server.request('get', '/organizations', { token: carol.token, query: { cursor: 'nope' } });
    expect(bad.status).to.equal(400);
    expect((await ctx.server.request('get', '/organizations', { token: null })).status).to.equal(401);
    expect((await ctx.server.request('get', '/organizations', { token: newUser().token })).body).to.deep.equal({ items: [], next_cursor: null });
  });
});
