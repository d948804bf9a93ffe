import { expect } from 'chai';
import pg from 'pg';
import { grantCredits } from '../../src/credits/ledger.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { eventually, isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { follow, type SseEvent } from '../support/sse.ts';

const TURNS = 50;
const TICK_MS = 50;

const textOf = (events: SseEvent[]) =>
  events.reduce((text, e) => (e.event === 'snapshot' ? e.data.content : e.event === 'delta' ? text + e.data.text : text), '');

/** Many turns of one worker streaming at once: one write and one NOTIFY per tick for all of them (src/conversations/stream-batch.ts). */
describe('chat streams at scale (one worker coalescing its turns)', function () {
  this.timeout(120_000);
  let server: TestServer;
  let worker: WorkerProcess;
  let db: Db;
  let listener: pg.Client;
  let alice: TestUser;
  let org: string;
  const notifications: { at: number; payload: Record<string, unknown> }[] = [];

  before(async () => {
    // A word every 40 ms: each turn streams for about a second, so the turns overlap; slots enough for all of them.
    const overrides = {
      CHAT_SANDBOX_DELAY_MS: '40',
      CHAT_STREAM_TICK_MS: String(TICK_MS),
      WORKER_POLL_INTERVAL_SECONDS: '0.5',
      WORKER_CONCURRENCY: '64',
      JOB_ORGANIZATION_CONCURRENCY: '64',
    };
    const url = await isolatedDatabase();
    db = createDb(url, { max: 4 });
    server = await startTestServer(overrides, { databaseUrl: url });
    const config = testConfig(overrides);
    worker = await startWorker(config, url, createLogger(config, 'test-worker'));
    alice = newUser();
    org = await createOrganization(server, alice);
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 1_000_000, description: 'Test credits' }));
    listener = new pg.Client({ connectionString: url });
    await listener.connect();
    listener.on('notification', (message) => notifications.push({ at: Date.now(), payload: JSON.parse(message.payload ?? '{}') }));
    await listener.query('LISTEN chat_run_events');
  });
  after(async () => {
    await listener?.end();
    await worker?.stop();
    await server?.stop();
    await db?.destroy();
  });

  async function conversationWithQuestion(n: number) {
    const conversation = await createConversation(server, alice, org, { title: `Stream ${n}` });
    const res = await server.request('post', `/conversations/${conversation.id}/messages`, {
      token: alice.token,
      body: { content: `Question ${n}: how do the tides of the Atlantic work?` },
    });
    expect(res.status).to.equal(201);
    return conversation.id as string;
  }

  it(`${TURNS} turns at once: each reader gets exactly its turn's text in order; NOTIFYs follow the ticks, not tokens × turns`, async () => {
    const conversations: string[] = [];
    for (let i = 0; i < TURNS; i++) conversations.push(await conversationWithQuestion(i));
    notifications.length = 0;
    const began = Date.now();
    const followers = [];
    for (const id of conversations) {
      const started = await server.request('post', `/conversations/${id}/run`, { token: alice.token, body: { max_credits: 40 } });
      expect(started.status).to.equal(201);
      followers.push({ runId: started.body.run.id as string, client: await follow(server.url, `/conversations/${id}/run/events`, alice.token) });
    }
    await Promise.all(followers.map(({ client }) => client.ended));
    // The ends' own notifications (one per run) are sent at their commits, before the streams end.
    const elapsed = Date.now() - began;

    for (const { runId, client } of followers) {
      expect(client.res.status).to.equal(200);
      const run = await db('chat_runs').where({ id: runId }).first();
      expect(run.status).to.equal('succeeded');
      const answer = await db('conversation_messages').where({ id: run.answer_message_id }).first();
      const { events } = client;
      expect(textOf(events)).to.equal(answer.content);
      expect(answer.content).to.match(/^\[sandbox answer\]/);
      // In order, each character once: one opening snapshot, then only deltas, their ids advancing through the text.
      const text = events.filter((e) => e.event === 'snapshot' || e.event === 'delta');
      expect(text[0]!.event).to.equal('snapshot');
      expect(text.slice(1).every((e) => e.event === 'delta')).to.equal(true);
      let length = 0;
      for (const e of text) {
        length = e.event === 'snapshot' ? e.data.content.length : length + e.data.text.length;
        expect(e.id).to.equal(`${run.stream_epoch}.${length}`);
      }
      expect(events.at(-1)).to.deep.equal({ event: 'done', data: { run_id: runId, status: 'succeeded', answer_message_id: run.answer_message_id } });
    }

    // The worker's text notifications name many conversations each (`keys`); each run's end sends one of its own (`key`).
    const ticks = notifications.filter((n) => Array.isArray(n.payload.keys));
    const ends = notifications.filter((n) => typeof n.payload.key === 'string');
    expect(ends).to.have.length(TURNS);
    expect(ticks.length + ends.length).to.equal(notifications.length);
    expect(ticks.length).to.be.at.most(Math.ceil(elapsed / TICK_MS) + 2);
    const words = (
      await db('chat_runs')
        .whereIn(
          'id',
          followers.map((f) => f.runId),
        )
        .select('snapshot')
    ).reduce((sum: number, row: { snapshot: string }) => sum + row.snapshot.split(/\s+/).length, 0);
    expect(ticks.length).to.be.lessThan(words / 5);
    // Coalesced across turns: while they all streamed, one notification carried many runs' progress.
    expect(Math.max(...ticks.map((n) => (n.payload.keys as string[]).length))).to.be.at.least(10);
  });

  it('a reader reconnecting with Last-Event-ID gets the rest of the text, none of it twice', async () => {
    const id = await conversationWithQuestion(999);
    const started = await server.request('post', `/conversations/${id}/run`, { token: alice.token, body: { max_credits: 40 } });
    expect(started.status).to.equal(201);
    const path = `/conversations/${id}/run/events`;
    const first = await follow(server.url, path, alice.token);
    await eventually('a first delta', async () => first.events.some((e) => e.event === 'delta'));
    first.hangUp();
    await first.ended;
    const seen = first.events.filter((e) => e.event === 'snapshot' || e.event === 'delta');
    const last = seen.at(-1)!;

    const resumed = await follow(server.url, path, alice.token, { 'last-event-id': last.id! });
    await resumed.ended;
    const run = await db('chat_runs').where({ id: started.body.run.id }).first();
    expect(run.status).to.equal('succeeded');
    const rest = resumed.events.filter((e) => e.event === 'snapshot' || e.event === 'delta');
    expect(rest.length).to.be.greaterThan(0);
    expect(rest.every((e) => e.event === 'delta')).to.equal(true);
    expect(textOf(seen) + textOf(rest)).to.equal(run.snapshot);
    expect(resumed.events.at(-1)!.event).to.equal('done');

    // No valid id: as without one (the run is over: one `done`); an id of another epoch: the whole text again.
    const unknown = await follow(server.url, path, alice.token, { 'last-event-id': 'nonsense' });
    await unknown.ended;
    expect(unknown.events.map((e) => e.event)).to.deep.equal(['done']);
    const stale = await follow(server.url, path, alice.token, { 'last-event-id': `${run.stream_epoch + 1}.3` });
    await stale.ended;
    expect(stale.events.map((e) => e.event)).to.deep.equal(['snapshot', 'done']);
    expect(stale.events[0]!.data.content).to.equal(run.snapshot);
  });
});
