import { expect } from 'chai';
import { createAsset, createConversation, createOrganization, createProject, createSkill, newMember, newUser, type TestUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

/**
 * The feed shows an entry about a resource — its subject, or the item a project entry names — only
 * to callers who can read that resource, and nulls ids in `data` naming one they cannot read. The
 * keyset pages over what each caller sees: full pages, every visible entry once.
 */
describe('activity feed: only what the caller can read', () => {
  const ctx = useServer();
  const feed = (org: string) => `/organizations/${org}/activity`;

  let org: string;
  let users: Record<string, TestUser>;
  /** Ids of the resources only the creator (and owners/admins) can read. */
  let privateIds: { asset: string; conversation: string; skill: string; project: string };
  let sharedAssetId: string;

  before(async () => {
    const owner = newUser();
    org = await createOrganization(ctx.server, owner);
    const creator = await newMember(ctx.db, org);
    users = {
      owner,
      admin: await newMember(ctx.db, org, 'admin'),
      member: await newMember(ctx.db, org),
      'viewer grant': await newMember(ctx.db, org),
      'editor grant': await newMember(ctx.db, org),
      'removed member': await newMember(ctx.db, org),
    };
    const project = await createProject(ctx.server, creator, org, { title: 'Secret project' });
    const asset = await createAsset(ctx.server, creator, org, { title: 'Secret asset' });
    const conversation = await createConversation(ctx.server, creator, org, { title: 'Secret chat' });
    const skill = await createSkill(ctx.server, creator, org, { name: 'Secret skill' });
    // Readable by every member, filed in the private project: its entries show, the project's id does not.
    const shared = await createAsset(ctx.server, creator, org, { title: 'Shared asset', visibility: 'workspace', project_id: project.id });
    privateIds = { asset: asset.id, conversation: conversation.id, skill: skill.id, project: project.id };
    sharedAssetId = shared.id;
    for (const [who, role] of [
      ['viewer grant', 'viewer'],
      ['editor grant', 'editor'],
    ] as const) {
      const grant = await ctx.server.request('post', `/access/asset/${asset.id}/grants`, { token: creator.token, body: { user_id: users[who]!.id, role } });
      expect(grant.status, JSON.stringify(grant.body)).to.equal(201);
    }
    const edit = await ctx.server.request('patch', `/assets/${asset.id}`, { token: users['editor grant']!.token, body: { title: 'Secret asset, edited' } });
    expect(edit.status).to.equal(200);
    const removed = await ctx.server.request('delete', `/organizations/${org}/members/${users['removed member']!.id}`, { token: owner.token });
    expect(removed.status).to.equal(204);
  });

  /** Every entry of the organization as the database holds it, in feed order and feed shape. */
  const allEntries = async () =>
    (
      await ctx
        .db('activity_events')
        .where({ organization_id: org })
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
    ).map((row: any) => ({
      id: row.id,
      action: row.action,
      actor_id: row.actor_id,
      subject_type: row.subject_type,
      subject_id: row.subject_id,
      data: row.data,
      created_at: row.created_at.toISOString(),
    }));

  /** What a member without `resources.administer` should see, given the private resources they can read. */
  const asMemberSees = (entries: Awaited<ReturnType<typeof allEntries>>, readable: string[]) => {
    const hidden = new Set(Object.values(privateIds).filter((id) => !readable.includes(id)));
    return entries
      .filter((e) => !hidden.has(e.subject_id) && !hidden.has(e.data.item_id))
      .map((e) => (e.data.project_id && hidden.has(e.data.project_id) ? { ...e, data: { ...e.data, project_id: null } } : e));
  };

  const pagesOf = async (user: TestUser, query: Record<string, string | number> = {}, limit = 2) => {
    const pages: any[][] = [];
    let cursor: string | undefined;
    do {
      const res = await ctx.server.request('get', feed(org), { token: user.token, query: { ...query, limit, cursor } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      pages.push(res.body.items);
      cursor = res.body.next_cursor ?? undefined;
    } while (cursor);
    return pages;
  };

  const expectations: [string, (entries: Awaited<ReturnType<typeof allEntries>>) => unknown[]][] = [
    ['owner', (all) => all],
    ['admin', (all) => all],
    ['member', (all) => asMemberSees(all, [])],
    ['viewer grant', (all) => asMemberSees(all, [privateIds.asset])],
    ['editor grant', (all) => asMemberSees(all, [privateIds.asset])],
  ];

  for (const [who, sees] of expectations) {
    it(`${who}: every entry they may see, once, in full pages`, async () => {
      const all = await allEntries();
      const expected = sees(all);
      const pages = await pagesOf(users[who]!);
      // Only the last page may be short: filtering happens before the keyset, not after it.
      for (const page of pages.slice(0, -1)) expect(page).to.have.length(2);
      expect(pages.flat()).to.deep.equal(expected);
    });
  }

  it('a member sees no title or id of a resource they cannot read, and the filters still apply', async () => {
    const all = await allEntries();
    // The arrangement has entries on every private resource, with their titles.
    for (const id of Object.values(privateIds)) expect(all.some((e) => e.subject_id === id)).to.equal(true);
    expect(JSON.stringify(all)).to.include('Secret asset');

    const seen = JSON.stringify((await pagesOf(users.member!, {}, 100)).flat());
    for (const text of [...Object.values(privateIds), 'Secret']) expect(seen).to.not.include(text);

    const assets = (await pagesOf(users.member!, { subject_type: 'asset' }, 100)).flat();
    expect(assets.map((e) => [e.action, e.subject_id])).to.deep.equal([['asset.created', sharedAssetId]]);
    expect(assets[0].data).to.deep.equal({ type: 'document', title: 'Shared asset', project_id: null });
    const granted = (await pagesOf(users['viewer grant']!, { subject_type: 'asset' }, 100)).flat();
    expect(granted.map((e) => e.action)).to.deep.equal(['asset.updated', 'access.grant_created', 'access.grant_created', 'asset.created', 'asset.created']);
  });

  it('removed member: 404, as for every read of the organization', async () => {
    const res = await ctx.server.request('get', feed(org), { token: users['removed member']!.token });
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal({ code: 'not_found', message: 'organization not found', data: { issues: [] } });
  });
});
