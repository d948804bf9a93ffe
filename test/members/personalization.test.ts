import { expect } from 'chai';
import { addMember, createOrganization, newUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

describe('members: personalization', () => {
  const ctx = useServer();

  const path = (org: string, userId: string) => `/organizations/${org}/members/${userId}/personalization`;

  it('reads defaults before anything is saved', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const res = await ctx.server.request('get', path(org, owner.id), { token: owner.token });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      personalization: { user_id: owner.id, display_name: null, job_title: null, timezone: null, preferences: {}, updated_at: null },
    });
  });

  it('saves the fields sent, keeps the others, clears with null, and records which fields changed (not their values)', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const preferences = { theme: 'dark', pinned: ['a', 'b'], nested: { n: 1, ok: true, none: null } };
    const first = await ctx.server.request('patch', path(org, owner.id), {
      token: owner.token,
      body: { display_name: '  Ada ', job_title: 'Editor', timezone: 'Europe/Paris', preferences },
    });
    expect(first.status).to.equal(200);
    const row = await ctx.db('organization_member_personalizations').where({ organization_id: org, user_id: owner.id }).first();
    expect(row).to.include({ display_name: 'Ada', job_title: 'Editor', timezone: 'Europe/Paris' });
    expect(row.preferences).to.deep.equal(preferences);
    expect(first.body).to.deep.equal({
      personalization: {
        user_id: owner.id,
        display_name: 'Ada',
        job_title: 'Editor',
        timezone: 'Europe/Paris',
        preferences,
        updated_at: row.updated_at.toISOString(),
      },
    });

    const second = await ctx.server.request('patch', path(org, owner.id), { token: owner.token, body: { job_title: null, preferences: { theme: 'light' } } });
    expect(second.status).to.equal(200);
    expect(second.body.personalization).to.include({ display_name: 'Ada', job_title: null, timezone: 'Europe/Paris' });
    expect(second.body.personalization.preferences).to.deep.equal({ theme: 'light' });
    const read = await ctx.server.request('get', path(org, owner.id), { token: owner.token });
    expect(read.body).to.deep.equal(second.body);

    const events = await ctx
      .db('activity_events')
      .where({ organization_id: org, action: 'member.personalization_updated' })
      .orderBy('created_at')
      .select('actor_id', 'subject_type', 'subject_id', 'data');
    expect(events).to.deep.equal([
      { actor_id: owner.id, subject_type: 'member', subject_id: owner.id, data: { fields: ['display_name', 'job_title', 'preferences', 'timezone'] } },
      { actor_id: owner.id, subject_type: 'member', subject_id: owner.id, data: { fields: ['job_title', 'preferences'] } },
    ]);
  });

  it('rejects invalid bodies with 400 naming the field, and writes nothing', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const cases: [unknown, (string | number)[]][] = [
      [{}, []],
      [{ timezone: 'Mars/Olympus' }, ['timezone']],
      [{ display_name: '' }, ['display_name']],
      [{ preferences: ['not', 'an', 'object'] }, ['preferences']],
      [{ preferences: { big: 'x'.repeat(17 * 1024) } }, ['preferences']],
      [{ colour: 'red' }, []],
    ];
    for (const [body, field] of cases) {
      const res = await ctx.server.request('patch', path(org, owner.id), { token: owner.token, body });
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.code).to.equal('validation_failed');
      if (field.length) expect(res.body.data.issues[0].path).to.deep.equal(field);
    }
    expect(await ctx.db('organization_member_personalizations').where({ organization_id: org })).to.deep.equal([]);
    expect(await ctx.db('activity_events').where({ organization_id: org, action: 'member.personalization_updated' })).to.deep.equal([]);
  });

  it("keeps each member's settings to themself: another member gets 403, a non-member 404", async () => {
    const owner = newUser();
    const ada = newUser();
    const outsider = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, ada, 'member');
    await ctx.server.request('patch', path(org, ada.id), { token: ada.token, body: { display_name: 'Ada' } });

    const forbidden = { code: 'forbidden', message: 'user_id: only the member themself may read or change their personalization', data: { issues: [] } };
    const read = await ctx.server.request('get', path(org, ada.id), { token: owner.token });
    expect(read.status).to.equal(403);
    expect(read.body).to.deep.equal(forbidden);
    const write = await ctx.server.request('patch', path(org, ada.id), { token: owner.token, body: { display_name: 'Hacked' } });
    expect(write.status).to.equal(403);
    expect(write.body).to.deep.equal(forbidden);

    const notFound = { code: 'not_found', message: 'organization not found', data: { issues: [] } };
    const outsideRead = await ctx.server.request('get', path(org, ada.id), { token: outsider.token });
    expect(outsideRead.status).to.equal(404);
    expect(outsideRead.body).to.deep.equal(notFound);
    const outsideWrite = await ctx.server.request('patch', path(org, outsider.id), { token: outsider.token, body: { display_name: 'Me' } });
    expect(outsideWrite.status).to.equal(404);
    expect(outsideWrite.body).to.deep.equal(notFound);

    const row = await ctx.db('organization_member_personalizations').where({ organization_id: org, user_id: ada.id }).first();
    expect(row.display_name).to.equal('Ada');
  });
});
