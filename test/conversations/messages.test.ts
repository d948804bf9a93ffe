import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';
import { conversationFields } from '../support/shapes.ts';

const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const messageFields = [
  'content',
  'conversation_id',
  'created_at',
  'created_by_id',
  'credits',
  'id',
  'parent_id',
  'role',
  'sibling_count',
  'sibling_index',
  'tool_call_id',
  'tool_calls',
];

describe('conversation messages, branches, fork and recall', () => {
  const ctx = useServer({}, { pool: 4 });

  async function post(user: TestUser, conversationId: string, body: Record<string, unknown>) {
    const res = await ctx.server.request('post', `/conversations/${conversationId}/messages`, { token: user.token, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.message;
  }
  const branch = (user: TestUser, conversationId: string, query: Record<string, string> = {}) =>
    ctx.server.request('get', `/conversations/${conversationId}/messages`, { token: user.token, query });
  const contents = (res: { body: { items: { content: string }[] } }) => res.body.items.map((m) => m.content);

  async function setup() {
    const alice = newUser();
    const org = await createOrganization(ctx.server, alice);
    const conversation = await createConversation(ctx.server, alice, org, { title: 'Trip' });
    return { alice, org, conversation };
  }

  describe('POST /conversations/{id}/messages', () => {
    it('appends under the active leaf, answers the exact shape, and moves the counters in the database', async () => {
      const { alice, conversation } = await setup();
      const res = await ctx.server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: 'Where to?' } });
      expect(res.status).to.equal(201);
      expect(Object.keys(res.body)).to.deep.equal(['message']);
      const first = res.body.message;
      expect(Object.keys(first).sort()).to.deep.equal(messageFields);
      expect(first.id).to.match(/^[0-9a-f-]{36}$/);
      expect(first.created_at).to.match(iso);
      const { id: _id, created_at: _at, ...rest } = first;
      expect(rest).to.deep.equal({
        conversation_id: conversation.id,
        parent_id: null,
        role: 'user',
        content: 'Where to?',
        created_by_id: alice.id,
        credits: null,
        tool_calls: null,
        tool_call_id: null,
        sibling_count: 1,
        sibling_index: 1,
      });
      const row = await ctx.db('conversations').where({ id: conversation.id }).first('active_leaf_id', 'message_count', 'last_message_at');
      expect(row).to.deep.equal({ active_leaf_id: first.id, message_count: 1, last_message_at: new Date(first.created_at) });

      const second = await post(alice, conversation.id, { content: 'Lisbon.', role: 'assistant' });
      expect(second).to.include({ parent_id: first.id, role: 'assistant', sibling_count: 1, sibling_index: 1 });
      const got = await ctx.server.request('get', `/conversations/${conversation.id}`, { token: alice.token });
      expect(got.body).to.include({ active_leaf_id: second.id, message_count: 2, last_message_at: second.created_at });
      expect(Object.keys(got.body).sort()).to.deep.equal(conversationFields);
    });

    it('refuses bad bodies (400 naming the field), viewers (403), outsiders like a missing id (404), deleted conversations (409)', async () => {
      const { alice, org, conversation } = await setup();
      const other = await createConversation(ctx.server, alice, org);
      const foreign = await post(alice, other.id, { content: 'elsewhere' });
      const cases: [Record<string, unknown>, string][] = [
        [{}, 'content'],
        [{ content: '' }, 'content'],
        [{ content: 'x'.repeat(200_001) }, 'content'],
        [{ content: 'hi', role: 'robot' }, 'role'],
        [{ content: 'hi', parent_id: 'nope' }, 'parent_id'],
        [{ content: 'hi', parent_id: foreign.id }, 'parent_id'],
        [{ content: 'hi', parent_id: randomUUID() }, 'parent_id'],
      ];
      for (const [body, field] of cases) {
        const res = await ctx.server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body });
        expect(res.status, JSON.stringify(body).slice(0, 80)).to.equal(400);
        expect(res.body.code).to.equal('validation_failed');
        expect(res.body.data.issues[0].path).to.deep.equal([field]);
      }
      expect(await ctx.db('conversation_messages').where({ conversation_id: conversation.id }).count('* as n').first()).to.deep.equal({ n: 0 });

      const viewer = newUser();
      const editor = newUser();
      await addMember(ctx.db, org, viewer);
      await addMember(ctx.db, org, editor);
      for (const [user, role] of [
        [viewer, 'viewer'],
        [editor, 'editor'],
      ] as const) {
        const grant = await ctx.server.request('post', `/access/chat_conversation/${conversation.id}/grants`, {
          token: alice.token,
          body: { user_id: user.id, role },
        });
        expect(grant.status).to.equal(201);
      }
      const denied = await ctx.server.request('post', `/conversations/${conversation.id}/messages`, { token: viewer.token, body: { content: 'hi' } });
      expect(denied.status).to.equal(403);
      expect(denied.body.code).to.equal('forbidden');
      expect((await branch(viewer, conversation.id)).status).to.equal(200);
      const byEditor = await post(editor, conversation.id, { content: 'from the editor' });
      expect(byEditor.created_by_id).to.equal(editor.id);

      const member = newUser();
      await addMember(ctx.db, org, member);
      const stranger = newUser();
      for (const user of [member, stranger]) {
        const hidden = await ctx.server.request('post', `/conversations/${conversation.id}/messages`, { token: user.token, body: { content: 'hi' } });
        const missing = await ctx.server.request('post', `/conversations/${randomUUID()}/messages`, { token: user.token, body: { content: 'hi' } });
        expect(hidden.status).to.equal(404);
        expect(hidden.body).to.deep.equal(missing.body);
        expect(hidden.body).to.deep.equal({ code: 'not_found', message: 'conversation not found', data: { issues: [] } });
        expect((await branch(user, conversation.id)).body).to.deep.equal(missing.body);
      }

      expect((await ctx.server.request('delete', `/conversations/${conversation.id}`, { token: alice.token })).status).to.equal(204);
      const gone = await ctx.server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: 'hi' } });
      expect(gone.status).to.equal(409);
      expect(gone.body.code).to.equal('conflict');
    });
  });

  describe('branches', () => {
    it('branches from an older parent, numbers siblings, reads any branch by leaf_id, pages by depth, switches with PATCH', async () => {
      const { alice, org, conversation } = await setup();
      const q = await post(alice, conversation.id, { content: 'q' });
      const a1 = await post(alice, conversation.id, { content: 'a1', role: 'assistant' });
      const f1 = await post(alice, conversation.id, { content: 'f1' });
      // Regenerate the answer: a sibling of a1 under q.
      const a2 = await post(alice, conversation.id, { content: 'a2', role: 'assistant', parent_id: q.id });
      expect(a2).to.include({ parent_id: q.id, sibling_count: 2, sibling_index: 2 });
      const f2 = await post(alice, conversation.id, { content: 'f2' });
      expect(f2.parent_id).to.equal(a2.id);
      expect(await ctx.db('conversations').where({ id: conversation.id }).first('active_leaf_id', 'message_count')).to.deep.equal({
        active_leaf_id: f2.id,
        message_count: 5,
      });

      const active = await branch(alice, conversation.id);
      expect(active.status).to.equal(200);
      expect(contents(active)).to.deep.equal(['q', 'a2', 'f2']);
      expect(active.body.next_cursor).to.equal(null);
      expect(active.body.items.map((m: any) => [m.sibling_index, m.sibling_count])).to.deep.equal([
        [1, 1],
        [2, 2],
        [1, 1],
      ]);
      expect(Object.keys(active.body.items[1]).sort()).to.deep.equal(messageFields);

      const old = await branch(alice, conversation.id, { leaf_id: f1.id });
      expect(contents(old)).to.deep.equal(['q', 'a1', 'f1']);
      expect(old.body.items[1]).to.include({ id: a1.id, sibling_index: 1, sibling_count: 2 });
      // A branch read up to an inner message ends there.
      expect(contents(await branch(alice, conversation.id, { leaf_id: a1.id }))).to.deep.equal(['q', 'a1']);

      // Paging: one message a page, and the cursor keeps the branch even if the active leaf moves.
      const page1 = await branch(alice, conversation.id, { limit: '1' });
      expect(contents(page1)).to.deep.equal(['q']);
      const switched = await ctx.server.request('patch', `/conversations/${conversation.id}`, { token: alice.token, body: { active_leaf_id: f1.id } });
      expect(switched.status).to.equal(200);
      expect(switched.body.active_leaf_id).to.equal(f1.id);
      const page2 = await branch(alice, conversation.id, { limit: '1', cursor: page1.body.next_cursor });
      expect(contents(page2)).to.deep.equal(['a2']);
      const page3 = await branch(alice, conversation.id, { limit: '1', cursor: page2.body.next_cursor });
      expect(contents(page3)).to.deep.equal(['f2']);
      expect(page3.body.next_cursor).to.equal(null);
      // The switch is kept on the server: the default branch is now f1's, and the next post continues it.
      expect(contents(await branch(alice, conversation.id))).to.deep.equal(['q', 'a1', 'f1']);
      const next = await post(alice, conversation.id, { content: 'f1 follow-up' });
      expect(next.parent_id).to.equal(f1.id);
      // Switching is no activity entry (only the rename of the conversation is).
      expect(await ctx.db('activity_events').where({ subject_id: conversation.id, action: 'conversation.updated' }).count('* as n').first()).to.deep.equal({
        n: 0,
      });

      const other = await createConversation(ctx.server, alice, org);
      const foreign = await post(alice, other.id, { content: 'elsewhere' });
      const notHere = await branch(alice, conversation.id, { leaf_id: foreign.id });
      expect(notHere.status).to.equal(404);
      expect(notHere.body).to.deep.equal({ code: 'not_found', message: 'message not found', data: { issues: [] } });
      const badSwitch = await ctx.server.request('patch', `/conversations/${conversation.id}`, { token: alice.token, body: { active_leaf_id: foreign.id } });
      expect(badSwitch.status).to.equal(400);
      expect(badSwitch.body.data.issues[0].path).to.deep.equal(['active_leaf_id']);
      const badCursor = await branch(alice, conversation.id, { cursor: 'bogus' });
      expect(badCursor.status).to.equal(400);

      // An empty conversation reads as an empty page.
      const empty = await createConversation(ctx.server, alice, org);
      expect((await branch(alice, empty.id)).body).to.deep.equal({ items: [], next_cursor: null });
    });
  });

  describe('POST /conversations/{id}/fork', () => {
    async function tree() {
      const { alice, org, conversation } = await setup();
      const q = await post(alice, conversation.id, { content: 'q' });
      const a1 = await post(alice, conversation.id, { content: 'a1', role: 'assistant' });
      const a2 = await post(alice, conversation.id, { content: 'a2', role: 'assistant', parent_id: q.id });
      const f2 = await post(alice, conversation.id, { content: 'f2' });
      const late = await post(alice, conversation.id, { content: 'late', parent_id: a1.id });
      return { alice, org, conversation, q, a1, a2, f2, late };
    }
    const copied = async (conversationId: string) =>
      ctx
        .db('conversation_messages')
        .where({ conversation_id: conversationId })
        .orderBy([{ column: 'created_at' }, { column: 'id' }])
        .select('id', 'parent_id', 'content', 'role', 'created_at');

    it('copies the branch up to the message into a new private conversation of the caller (read access is enough)', async () => {
      const { alice, org, conversation, a2 } = await tree();
      const bob = newUser();
      await addMember(ctx.db, org, bob);
      await ctx.server.request('post', `/access/chat_conversation/${conversation.id}/grants`, {
        token: alice.token,
        body: { user_id: bob.id, role: 'viewer' },
      });
      const res = await ctx.server.request('post', `/conversations/${conversation.id}/fork`, { token: bob.token, body: { message_id: a2.id } });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      expect(Object.keys(res.body).sort()).to.deep.equal(conversationFields);
      const fork = res.body;
      expect(fork).to.include({
        organization_id: org,
        created_by_id: bob.id,
        title: 'Trip (fork)',
        visibility: 'private',
        forked_from_conversation_id: conversation.id,
        message_count: 2,
        project_id: null,
      });
      const rows = await copied(fork.id);
      expect(rows.map((r) => r.content)).to.deep.equal(['q', 'a2']);
      expect(rows[0]!.parent_id).to.equal(null);
      expect(rows[1]!.parent_id).to.equal(rows[0]!.id);
      expect(rows.map((r) => r.id)).to.not.include.members([a2.id]);
      expect(fork.active_leaf_id).to.equal(rows[1]!.id);
      expect(fork.last_message_at).to.equal(a2.created_at);
      expect(contents(await branch(bob, fork.id))).to.deep.equal(['q', 'a2']);
      const got = await ctx.server.request('get', `/conversations/${fork.id}`, { token: bob.token });
      expect(got.body).to.deep.equal(fork);
      // The fork is Bob's own and private: he may post to it; another member cannot see it.
      await post(bob, fork.id, { content: 'mine now' });
      const carol = newUser();
      await addMember(ctx.db, org, carol);
      expect((await ctx.server.request('get', `/conversations/${fork.id}`, { token: carol.token })).status).to.equal(404);
      // The source is unchanged.
      expect(await ctx.db('conversations').where({ id: conversation.id }).first('message_count')).to.deep.equal({ message_count: 5 });
    });

    it('mode all copies every message created up to the message, parents remapped', async () => {
      const { alice, conversation, q, a1, f2 } = await tree();
      const res = await ctx.server.request('post', `/conversations/${conversation.id}/fork`, { token: alice.token, body: { message_id: f2.id, mode: 'all' } });
      expect(res.status).to.equal(201);
      const rows = await copied(res.body.id);
      expect(rows.map((r) => r.content)).to.deep.equal(['q', 'a1', 'a2', 'f2']);
      const byContent = Object.fromEntries(rows.map((r) => [r.content, r]));
      expect(byContent.q!.parent_id).to.equal(null);
      expect(byContent.a1!.parent_id).to.equal(byContent.q!.id);
      expect(byContent.a2!.parent_id).to.equal(byContent.q!.id);
      expect(byContent.f2!.parent_id).to.equal(byContent.a2!.id);
      expect(rows.map((r) => r.id)).to.not.have.members([q.id, a1.id]);
      expect(res.body).to.include({ message_count: 4, active_leaf_id: byContent.f2!.id, last_message_at: f2.created_at });
      const tree2 = await branch(alice, res.body.id, { leaf_id: byContent.a1!.id });
      expect(tree2.body.items[1]).to.include({ content: 'a1', sibling_count: 2, sibling_index: 1 });
    });

    it('answers 400 for a message of another conversation, 403 without resources.create, 404 when unreadable, 409 when deleted', async () => {
      const { alice, org, conversation, a1 } = await tree();
      const other = await createConversation(ctx.server, alice, org);
      const foreign = await post(alice, other.id, { content: 'elsewhere' });
      const fork = (user: TestUser, id: string, body: Record<string, unknown>) =>
        ctx.server.request('post', `/conversations/${id}/fork`, { token: user.token, body });
      const wrong = await fork(alice, conversation.id, { message_id: foreign.id });
      expect(wrong.status).to.equal(400);
      expect(wrong.body.data.issues[0].path).to.deep.equal(['message_id']);
      expect((await fork(alice, conversation.id, { message_id: a1.id, mode: 'some' })).status).to.equal(400);

      await ctx.db('organization_roles').insert({ organization_id: org, key: 'reader', name: 'Reader', permissions: ['members.view'] });
      const reader = newUser();
      await addMember(ctx.db, org, reader, 'reader');
      await ctx.server.request('post', `/access/chat_conversation/${conversation.id}/grants`, {
        token: alice.token,
        body: { user_id: reader.id, role: 'viewer' },
      });
      const denied = await fork(reader, conversation.id, { message_id: a1.id });
      expect(denied.status).to.equal(403);
      expect(denied.body.code).to.equal('forbidden');

      const member = newUser();
      await addMember(ctx.db, org, member);
      const hidden = await fork(member, conversation.id, { message_id: a1.id });
      const missing = await fork(member, randomUUID(), { message_id: a1.id });
      expect(hidden.status).to.equal(404);
      expect(hidden.body).to.deep.equal(missing.body);

      await ctx.server.request('delete', `/conversations/${conversation.id}`, { token: alice.token });
      expect((await fork(alice, conversation.id, { message_id: a1.id })).status).to.equal(409);
      expect(await ctx.db('conversations').where({ forked_from_conversation_id: conversation.id }).count('* as n').first()).to.deep.equal({ n: 0 });
    });
  });

  describe('GET /conversations/recall', () => {
    const recall = (user: TestUser, query: Record<string, string>) => ctx.server.request('get', '/conversations/recall', { token: user.token, query });

    it('ranks hits with a marked snippet, pages by (rank, id) without repeats, and never shows a message the caller cannot read', async () => {
      const alice = newUser();
      const bob = newUser();
      const org = await createOrganization(ctx.server, alice);
      await addMember(ctx.db, org, bob);
      const bobs = await createConversation(ctx.server, bob, org, { title: 'Bob notes' });
      const strong = await post(bob, bobs.id, { content: 'Penguins, penguins everywhere: the penguin colony grew.' });
      const weak = await post(bob, bobs.id, { content: `A long note about travel plans and budgets. ${'filler words '.repeat(30)} One penguin was seen.` });
      await post(bob, bobs.id, { content: 'Nothing relevant here.' });
      const shared = await createConversation(ctx.server, alice, org, { title: 'Open', visibility: 'workspace' });
      const open = await post(alice, shared.id, { content: 'Penguin facts for the team.' });
      // Not readable by Bob: Alice's private conversation, a deleted one, another organization.
      const secret = await createConversation(ctx.server, alice, org, { title: 'Secret' });
      await post(alice, secret.id, { content: 'Secret penguin plans.' });
      const deleted = await createConversation(ctx.server, bob, org, { title: 'Gone' });
      await post(bob, deleted.id, { content: 'Deleted penguin memo.' });
      await ctx.server.request('delete', `/conversations/${deleted.id}`, { token: bob.token });
      const elsewhere = await createOrganization(ctx.server, bob);
      const foreign = await createConversation(ctx.server, bob, elsewhere, { title: 'Elsewhere' });
      await post(bob, foreign.id, { content: 'Penguin in another organization.' });

      const res = await recall(bob, { organization_id: org, q: 'penguin' });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.next_cursor).to.equal(null);
      const ids = res.body.items.map((i: any) => i.message_id);
      expect(ids).to.have.members([strong.id, weak.id, open.id]);
      expect(ids.indexOf(strong.id)).to.be.lessThan(ids.indexOf(weak.id));
      const ranks = res.body.items.map((i: any) => i.rank);
      expect(ranks).to.deep.equal([...ranks].sort((a: number, b: number) => b - a));
      const hit = res.body.items.find((i: any) => i.message_id === strong.id);
      expect(Object.keys(hit).sort()).to.deep.equal(['conversation_id', 'conversation_title', 'created_at', 'message_id', 'rank', 'role', 'snippet']);
      expect(hit).to.include({ conversation_id: bobs.id, conversation_title: 'Bob notes', role: 'user', created_at: strong.created_at });
      expect(hit.snippet).to.include('<mark>Penguins</mark>');
      const weakHit = res.body.items.find((i: any) => i.message_id === weak.id);
      expect(weakHit.snippet.length).to.be.lessThan(weak.content.length);
      expect(weakHit.snippet).to.include('<mark>penguin</mark>');

      // Alice (owner of the organization: she administers every conversation) sees the secret too but not the deleted one.
      const byAlice = await recall(alice, { organization_id: org, q: 'penguin' });
      expect(byAlice.body.items.map((i: any) => i.conversation_title).sort()).to.deep.equal(['Bob notes', 'Bob notes', 'Open', 'Secret']);

      // One hit per page: every hit once, in the same order.
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await recall(bob, { organization_id: org, q: 'penguin', limit: '1', ...(cursor && { cursor }) });
        expect(page.status).to.equal(200);
        seen.push(...page.body.items.map((i: any) => i.message_id));
        cursor = page.body.next_cursor ?? undefined;
        // A message inserted while paging never repeats or shifts a page already read.
        if (seen.length === 1) await post(bob, bobs.id, { content: 'penguin' });
      } while (cursor);
      expect(new Set(seen).size).to.equal(seen.length);
      expect(seen.filter((id) => ids.includes(id))).to.deep.equal(ids);

      // Web-search syntax: an excluded word.
      const without = await recall(bob, { organization_id: org, q: 'penguin -colony' });
      expect(without.body.items.map((i: any) => i.message_id)).to.not.include(strong.id);
    });

    it('answers an empty page outside the organization and 400 without q', async () => {
      const alice = newUser();
      const org = await createOrganization(ctx.server, alice);
      const conversation = await createConversation(ctx.server, alice, org, { visibility: 'workspace' });
      await post(alice, conversation.id, { content: 'zebra crossing' });
      expect((await recall(alice, { organization_id: org, q: 'zebra' })).body.items).to.have.length(1);
      const stranger = newUser();
      for (const organization_id of [org, randomUUID()]) {
        const res = await recall(stranger, { organization_id, q: 'zebra' });
        expect(res.status).to.equal(200);
        expect(res.body).to.deep.equal({ items: [], next_cursor: null });
      }
      const noQ = await recall(alice, { organization_id: org });
      expect(noQ.status).to.equal(400);
      expect(noQ.body.data.issues[0].path).to.deep.equal(['q']);
    });
  });
});
