import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

/** Chat-run credits are attributed only to a conversation (and message) the caller can read in the organization. */
describe('POST /organizations/{id}/credits/chat-runs/begin: attribution', () => {
  const ctx = useServer();

  async function conversationWithMessage(user: TestUser, org: string) {
    const conversation = await createConversation(ctx.server, user, org, { title: 'Private' });
    const posted = await ctx.server.request('post', `/conversations/${conversation.id}/messages`, { token: user.token, body: { content: 'hello' } });
    expect(posted.status).to.equal(201);
    return { conversationId: conversation.id as string, messageId: posted.body.message.id as string };
  }
  const begin = (user: TestUser, org: string, body: Record<string, unknown>) =>
    ctx.server.request('post', `/organizations/${org}/credits/chat-runs/begin`, {
      token: user.token,
      body: { run_id: `run_${randomUUID()}`, amount: 5, ...body },
    });
  const notFound = (field: string) => {
    const message = `${field}: no ${field === 'conversation_id' ? 'conversation' : 'message'} you can read in this organization${field === 'message_id' ? ' and conversation' : ''}`;
    return { code: 'not_found', message, data: { issues: [{ path: [field], message }] } };
  };

  it('404 naming the field for what the caller cannot read, another organization’s or another conversation’s; no hold placed', async () => {
    const owner = newUser();
    const member = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, member);
    const stranger = newUser();
    const otherOrg = await createOrganization(ctx.server, stranger);

    const owners = await conversationWithMessage(owner, org); // private: the member cannot read it
    const mine = await conversationWithMessage(member, org);
    const mineToo = await conversationWithMessage(member, org);
    const elsewhere = await conversationWithMessage(stranger, otherOrg);
    await ctx.server.request('delete', `/conversations/${mineToo.conversationId}`, { token: member.token });

    const cases: [Record<string, unknown>, string][] = [
      [{ conversation_id: owners.conversationId }, 'conversation_id'],
      [{ message_id: owners.messageId }, 'message_id'],
      [{ conversation_id: mine.conversationId, message_id: owners.messageId }, 'message_id'],
      [{ conversation_id: owners.conversationId, message_id: mine.messageId }, 'message_id'],
      [{ conversation_id: elsewhere.conversationId }, 'conversation_id'],
      [{ conversation_id: elsewhere.conversationId, message_id: elsewhere.messageId }, 'conversation_id'],
      [{ message_id: elsewhere.messageId }, 'message_id'],
      [{ conversation_id: mineToo.conversationId }, 'conversation_id'],
      [{ conversation_id: randomUUID() }, 'conversation_id'],
      [{ message_id: randomUUID() }, 'message_id'],
      [{ conversation_id: 'chat-42' }, 'conversation_id'],
      [{ message_id: 'msg-42' }, 'message_id'],
    ];
    for (const [body, field] of cases) {
      const res = await begin(member, org, body);
      expect(res.status, JSON.stringify(body)).to.equal(404);
      expect(res.body, JSON.stringify(body)).to.deep.equal(notFound(field));
    }
    expect(await ctx.db('credit_holds').where({ organization_id: org })).to.deep.equal([]);

    // Its own conversation and message, or the message alone: reserved and attributed.
    const both = await begin(member, org, { conversation_id: mine.conversationId, message_id: mine.messageId });
    expect(both.status, JSON.stringify(both.body)).to.equal(201);
    expect(both.body.hold).to.include({ conversation_id: mine.conversationId, message_id: mine.messageId, user_id: member.id, amount: 5 });
    const messageOnly = await begin(member, org, { message_id: mine.messageId });
    expect(messageOnly.status).to.equal(201);
    // The owner (an organization owner reads every conversation of it) may attribute to the member's.
    expect((await begin(owner, org, { conversation_id: mine.conversationId })).status).to.equal(201);
  });
});
