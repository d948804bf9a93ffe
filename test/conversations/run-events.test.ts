import { expect } from 'chai';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { eventually, isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { spawnWeb, type WebChild } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { follow, type SseEvent } from '../support/sse.ts';

const textOf = (events: SseEvent[]) =>
  events.reduce((text, e) => (e.event === 'snapshot' ? e.data.content : e.event === 'delta' ? text + e.data.text : text), '');

/** GET /conversations/{id}/run/events across processes (NOTIFY), and stamping a turn's credits. */
describe('conversation run events (SSE) and message credits', function () {
  this.timeout(90_000);
  let server: TestServer;
  let other: WebChild;
  let worker: WorkerProcess;
  let db: Db;
  let alice: TestUser;
  let viewer: TestUser;
  let org: string;

  before(async () => {
    const overrides = { CHAT_SANDBOX_DELAY_MS: '40', WORKER_POLL_INTERVAL_SECONDS: '0.5' };
    const url = await isolatedDatabase();
    db = createDb(url, { max: 4 });
    server = await startTestServer(overrides, { databaseUrl: url });
    other = await spawnWeb({ DATABASE_URL: url });
    const config = testConfig(overrides);
    worker = await startWorker(config, url, createLogger(config, 'test-worker'));
    alice = newUser();
    viewer = newUser();
    org = await createOrganization(server, alice);
    await addMember(db, org, viewer, 'member');
  });
  after(async () => {
    await worker?.stop();
    await other?.stop();
    await server?.stop();
    await db?.destroy();
  });

  async function conversationWithQuestion() {
    const conversation = await createConversation(server, alice, org, { title: 'Live' });
    const res = await server.request('post', `/conversations/${conversation.id}/messages`, {
      token: alice.token,
      body: { content: 'Tell me about the tides of the Atlantic.' },
    });
    expect(res.status).to.equal(201);
    return conversation;
  }

  it('streams snapshot, deltas and done to clients of two web processes; the stream then ends', async () => {
    const conversation = await conversationWithQuestion();
    const none = await server.request('get', `/conversations/${conversation.id}/run/events`, { token: alice.token });
    expect(none.status).to.equal(404);

    const started = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { max_credits: 40 } });
    expect(started.status).to.equal(201);
    const path = `/conversations/${conversation.id}/run/events`;
    const clients = await Promise.all([follow(server.url, path, alice.token), follow(server.url, path, alice.token), follow(other.url, path, alice.token)]);
    for (const client of clients) {
      expect(client.res.status).to.equal(200);
      expect(client.res.headers.get('content-type')).to.match(/^text\/event-stream/);
    }
    await Promise.all(clients.map((c) => c.ended));
    // One LISTEN connection per web process, shared by its streams.
    const listening = await db.raw(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN chat_run_events'`);
    expect(listening.rows[0].n).to.equal(2);

    const run = await db('chat_runs').where({ id: started.body.run.id }).first();
    expect(run.status).to.equal('succeeded');
    for (const { events } of clients) {
      expect(events[0]!.event).to.equal('snapshot');
      expect(events.filter((e) => e.event === 'delta').length).to.be.greaterThan(0);
      expect(events.at(-1)).to.deep.equal({ event: 'done', data: { run_id: run.id, status: 'succeeded', answer_message_id: run.answer_message_id } });
      expect(events.filter((e) => e.event === 'done')).to.have.length(1);
      expect(textOf(events)).to.equal(run.snapshot);
    }
    const answer = await db('conversation_messages').where({ id: run.answer_message_id }).first();
    expect(textOf(clients[2]!.events)).to.equal(answer.content);

    // Over: one `done`, then the stream closes.
    const late = await follow(other.url, path, alice.token);
    await late.ended;
    expect(late.res.status).to.equal(200);
    expect(late.events).to.deep.equal([{ event: 'done', data: { run_id: run.id, status: 'succeeded', answer_message_id: run.answer_message_id } }]);
  });

  it('stamps the turn’s credits on the answer (idempotent); viewers may read events but not stamp; outsiders get 404', async () => {
    const conversation = await conversationWithQuestion();
    const started = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { max_credits: 40 } });
    expect(started.status).to.equal(201);
    const run = await eventually('the run finished', async () => {
      const row = await db('chat_runs').where({ id: started.body.run.id }).first();
      return row.credits_charged !== null ? row : null;
    });
    expect(run.credits_charged).to.be.greaterThan(0);
    const path = `/conversations/${conversation.id}/messages/credits`;
    const first = await server.request('post', path, { token: alice.token, body: { message_id: run.answer_message_id } });
    expect(first.status).to.equal(200);
    expect(Object.keys(first.body)).to.deep.equal(['message']);
    expect(first.body.message).to.include({ id: run.answer_message_id, role: 'assistant', credits: run.credits_charged });
    const again = await server.request('post', path, { token: alice.token, body: { message_id: run.answer_message_id } });
    expect(again.body).to.deep.equal(first.body);
    const listed = await server.request('get', `/conversations/${conversation.id}/messages`, { token: alice.token });
    expect(listed.body.items.at(-1)).to.include({ id: run.answer_message_id, credits: run.credits_charged });
    // The question: the run's capture is the answer's, not its.
    const question = await server.request('post', path, { token: alice.token, body: { message_id: run.message_id } });
    expect(question.body.message).to.include({ id: run.message_id, credits: 0 });

    const elsewhere = await conversationWithQuestion();
    const foreign = (await db('conversation_messages').where({ conversation_id: elsewhere.id }).first('id')).id;
    const wrong = await server.request('post', path, { token: alice.token, body: { message_id: foreign } });
    expect(wrong.status).to.equal(400);
    expect(wrong.body.data.issues[0].path).to.deep.equal(['message_id']);

    const share = await server.request('post', `/access/chat_conversation/${conversation.id}/grants`, {
      token: alice.token,
      body: { user_id: viewer.id, role: 'viewer' },
    });
    expect(share.status).to.be.oneOf([200, 201]);
    const viewed = await follow(server.url, `/conversations/${conversation.id}/run/events`, viewer.token);
    await viewed.ended;
    expect(viewed.res.status).to.equal(200);
    expect(viewed.events.map((e) => e.event)).to.deep.equal(['done']);
    const refused = await server.request('post', path, { token: viewer.token, body: { message_id: run.answer_message_id } });
    expect(refused.status).to.equal(403);

    const outsider = newUser();
    const hidden = await follow(server.url, `/conversations/${conversation.id}/run/events`, outsider.token);
    expect(hidden.res.status).to.equal(404);
    expect((await server.request('post', path, { token: outsider.token, body: { message_id: run.answer_message_id } })).status).to.equal(404);
  });
});
