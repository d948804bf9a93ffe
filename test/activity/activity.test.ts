import { expect } from 'chai';
import { addMember, createOrganization, newUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

describe('activity feed', () => {
  const ctx = useServer();

  const feed = (org: string) => `/organizations/${org}/activity`;
  const asJson = (row: any) => ({
    id: row.id,
    action: row.action,
    actor_id: row.actor_id,
    subject_type: row.subject_type,
    subject_id: row.subject_id,
    data: row.data,
    created_at: row.created_at.toISOString(),
  });

  it('lists the events newest first with the full shape, each once across pages', async () => {
    const owner = newUser();
    const ada = newUser();
    const org = await createOrganization(ctx.server, owner, `Feed ${Date.now()}`);
    await addMember(ctx.db, org, ada, 'member');
    await ctx.server.request('patch', `/organizations/${org}`, { token: owner.token, body: { name: 'Renamed feed' } });
    await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: owner.token, body: { role: 'admin' } });
    await ctx.server.request('patch', `/organizations/${org}/alert-policy`, { token: owner.token, body: { enabled: false } });
    const rows = await ctx
      .db('activity_events')
      .where({ organization_id: org })
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ]);
    const expected = rows.map(asJson);
    expect(expected.map((e) => e.action)).to.deep.equal(['alert_policy.updated', 'member.role_changed', 'organization.updated', 'organization.created']);

    const all = await ctx.server.request('get', feed(org), { token: ada.token });
    expect(all.status).to.equal(200);
    expect(all.body).to.deep.equal({ items: expected, next_cursor: null });
    expect(all.body.items[1]).to.deep.equal({
      ...expected[1],
      actor_id: owner.id,
      subject_type: 'member',
      subject_id: ada.id,
      data: { from: 'member', to: 'admin' },
    });

    const seen = [];
    let cursor: string | undefined;
    do {
      const page = await ctx.server.request('get', feed(org), { token: owner.token, query: { limit: 3, cursor } });
      seen.push(...page.body.items);
      cursor = page.body.next_cursor ?? undefined;
      // An event arriving between pages lands before the cursor and never shifts what follows.
      if (cursor) await ctx.server.request('patch', `/organizations/${org}`, { token: owner.token, body: { name: `Again ${Date.now()}` } });
    } while (cursor);
    expect(seen).to.deep.equal(expected);
  });

  it('filters by action, actor, subject type and since', async () => {
    const owner = newUser();
    const ada = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, ada, 'admin');
    await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}/personalization`, { token: ada.token, body: { timezone: 'UTC' } });
    await ctx.server.request('patch', `/organizations/${org}/alert-policy`, { token: ada.token, body: { enabled: false } });
    const actions = async (query: Record<string, string>) =>
      (await ctx.server.request('get', feed(org), { token: owner.token, query })).body.items.map((e: { action: string }) => e.action);

    expect(await actions({ action: 'alert_policy.updated' })).to.deep.equal(['alert_policy.updated']);
    expect(await actions({ actor_id: ada.id })).to.deep.equal(['alert_policy.updated', 'member.personalization_updated']);
    expect(await actions({ subject_type: 'organization' })).to.deep.equal(['organization.created']);
    expect(await actions({ actor_id: ada.id, subject_type: 'member' })).to.deep.equal(['member.personalization_updated']);
    const last = await ctx.db('activity_events').where({ organization_id: org, action: 'alert_policy.updated' }).first('created_at');
    expect(await actions({ since: last.created_at.toISOString() })).to.deep.equal(['alert_policy.updated']);
    expect(await actions({ since: new Date(last.created_at.getTime() + 1).toISOString() })).to.deep.equal([]);
  });

  it('needs activity.view (403), is 404 to outsiders, and rejects bad filters (400)', async () => {
    const owner = newUser();
    const guest = newUser();
    const org = await createOrganization(ctx.server, owner);
    await ctx.db('organization_roles').insert({ organization_id: org, key: 'guest', name: 'Guest', permissions: ['members.view'] });
    await addMember(ctx.db, org, guest, 'guest');
    const forbidden = await ctx.server.request('get', feed(org), { token: guest.token });
    expect(forbidden.status).to.equal(403);
    expect(forbidden.body).to.deep.equal({ code: 'forbidden', message: 'your role "guest" lacks the permission activity.view', data: { issues: [] } });
    const outside = await ctx.server.request('get', feed(org), { token: newUser().token });
    expect(outside.status).to.equal(404);
    expect(outside.body).to.deep.equal({ code: 'not_found', message: 'organization not found', data: { issues: [] } });
    const since = await ctx.server.request('get', feed(org), { token: owner.token, query: { since: 'yesterday' } });
    expect(since.status).to.equal(400);
    expect(since.body.data.issues[0].path).to.deep.equal(['since']);
    const limit = await ctx.server.request('get', feed(org), { token: owner.token, query: { limit: 101 } });
    expect(limit.status).to.equal(400);
    expect(limit.body.data.issues[0].path).to.deep.equal(['limit']);
  });
});
