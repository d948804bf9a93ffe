import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import type { Db } from '../../src/db/knex.ts';
import { grant } from '../access/fixtures.ts';
import { eventually } from '../support/eventually.ts';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { ApiResponse, TestServer } from '../support/server.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { type FakeUpstream, startUpstream } from '../support/upstream.ts';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** One organization per operation, so each counts only its own effects. */
interface Fixture {
  org: string;
  owner: TestUser;
  admin: TestUser;
  conversation: string;
  otherConversation: string;
  task: string;
  otherTask: string;
}

interface Case {
  operation: string;
  method: 'post' | 'patch';
  status: number;
  path(f: Fixture): string;
  body(f: Fixture): Record<string, unknown> | undefined;
  /** Another request sent under the same key: another body, or (an operation without one) another path. */
  other(f: Fixture): { path: string; body?: Record<string, unknown> };
  /** Rows that a charge or a creation by this operation adds (ledger rows where credits move at once). */
  effects(db: Db, f: Fixture): Promise<number>;
  /** What must have ended before the same request may run again for another caller (a run lock, a queued run). */
  settle?(db: Db, f: Fixture): Promise<unknown>;
  /** The other caller's fresh request writes rows of its own (false: it repeats a change already made, e.g. the same plan). */
  otherCallerWrites?: boolean;
  /** A request that still does work after the first test (default: the same request under a new key). */
  busyBody?(f: Fixture): Record<string, unknown>;
  /** Rows the operation's work locks besides the organization's and its balance (held to keep the first request running). */
  busyLocks?: string;
  /** `transaction`: the key is written with the work, in one transaction (credits); `record`: before it. */
  mode?: 'record' | 'transaction';
}

const count = async (query: PromiseLike<{ n: string | number }[]>) => Number((await query)[0]!.n);
const ledgerRows = (db: Db, org: string) => count(db('credit_ledger_entries').where({ organization_id: org }).count('* as n'));
const holds = (db: Db, org: string) => count(db('credit_holds').where({ organization_id: org }).count('* as n'));

/** Every operation issue 19 names, plus the credit operations that already honoured the key and a plain create. */
function cases(upstream: () => FakeUpstream): Case[] {
  return [
    {
      operation: 'runSocialNet2Profile',
      method: 'post',
      status: 200,
      path: () => '/social/net2_profile',
      body: (f) => ({ organization_id: f.org, input: { username: 'ada' } }),
      other: (f) => ({ path: '/social/net2_profile', body: { organization_id: f.org, input: { username: 'grace' } } }),
      effects: async (db, f) => (await ledgerRows(db, f.org)) + (await count(db('metered_calls').where({ organization_id: f.org }).count('* as n'))),
    },
    {
      operation: 'runSearch',
      method: 'post',
      status: 200,
      path: () => '/search',
      body: (f) => ({ organization_id: f.org, query: 'winter foxes', tool_call_id: 'call-1' }),
      other: (f) => ({ path: '/search', body: { organization_id: f.org, query: 'summer foxes', tool_call_id: 'call-1' } }),
      effects: async (db, f) => (await ledgerRows(db, f.org)) + (await count(db('metered_calls').where({ organization_id: f.org }).count('* as n'))),
    },
    {
      operation: 'runReadUrl',
      method: 'post',
      status: 200,
      path: () => '/read-url',
      body: (f) => ({ organization_id: f.org, url: `${upstream().url}/article` }),
      other: (f) => ({ path: '/read-url', body: { organization_id: f.org, url: `${upstream().url}/article?page=2` } }),
      effects: async (db, f) => (await ledgerRows(db, f.org)) + (await count(db('metered_calls').where({ organization_id: f.org }).count('* as n'))),
    },
    {
      operation: 'createGeneration',
      method: 'post',
      status: 201,
      path: () => '/generations',
      body: (f) => ({ organization_id: f.org, kind: 'image', prompt: 'A fox in the snow' }),
      other: (f) => ({ path: '/generations', body: { organization_id: f.org, kind: 'image', prompt: 'A fox in the rain' } }),
      // Holds, not ledger rows: the worker captures each generation later, on its own schedule.
      effects: async (db, f) => (await holds(db, f.org)) + (await count(db('generations').where({ organization_id: f.org }).count('* as n'))),
    },
    {
      operation: 'startConversationRun',
      method: 'post',
      status: 201,
      path: (f) => `/conversations/${f.conversation}/run`,
      body: () => ({ max_credits: 40 }),
      other: (f) => ({ path: `/conversations/${f.conversation}/run`, body: { max_credits: 41 } }),
      effects: (db, f) => count(db('chat_runs').where({ conversation_id: f.conversation }).count('* as n')),
      busyLocks: 'SELECT 1 FROM conversations WHERE id = :conversation FOR UPDATE',
      settle: (db, f) =>
        eventually('the run ended', async () => (await db('conversations').where({ id: f.conversation }).first('active_run_id')).active_run_id === null),
    },
    {
      operation: 'triggerScheduledTask',
      method: 'post',
      status: 202,
      path: (f) => `/scheduled-tasks/${f.task}/trigger`,
      body: () => undefined,
      other: (f) => ({ path: `/scheduled-tasks/${f.otherTask}/trigger` }),
      effects: (db, f) => count(db('scheduled_task_runs').where({ task_id: f.task }).count('* as n')),
      busyLocks: 'SELECT 1 FROM scheduled_tasks WHERE id = :task FOR UPDATE',
      settle: (db, f) =>
        eventually(
          'the run ended',
          async () => (await count(db('scheduled_task_runs').where({ task_id: f.task }).whereIn('status', ['queued', 'running']).count('* as n'))) === 0,
        ),
    },
    {
      operation: 'changeSubscriptionPlan',
      method: 'patch',
      status: 200,
      path: (f) => `/organizations/${f.org}/subscription`,
      body: () => ({ plan: 'pro' }),
      other: (f) => ({ path: `/organizations/${f.org}/subscription`, body: { plan: 'team' } }),
      effects: async (db, f) =>
        (await ledgerRows(db, f.org)) +
        (await count(db('billing_events').where({ organization_id: f.org, type: 'subscription.plan_changed' }).count('* as n'))),
      otherCallerWrites: false,
      busyBody: () => ({ plan: 'team' }),
      busyLocks: 'SELECT 1 FROM billing_subscriptions WHERE organization_id = :org FOR UPDATE',
    },
    {
      operation: 'beginChatRunCredits',
      method: 'post',
      status: 201,
      path: (f) => `/organizations/${f.org}/credits/chat-runs/begin`,
      body: () => ({ run_id: 'run-1', amount: 10 }),
      other: (f) => ({ path: `/organizations/${f.org}/credits/chat-runs/begin`, body: { run_id: 'run-2', amount: 10 } }),
      effects: async (db, f) => (await ledgerRows(db, f.org)) + (await holds(db, f.org)),
      // Another member beginning the same run_id is a 409 (the run is the first member's); their key is theirs all the same.
      otherCallerWrites: false,
      busyBody: () => ({ run_id: 'run-busy', amount: 10 }),
      mode: 'transaction',
    },
    {
      operation: 'adjustCredits',
      method: 'post',
      status: 201,
      path: (f) => `/organizations/${f.org}/credits/adjustments`,
      body: () => ({ amount: 5, reason: 'goodwill' }),
      other: (f) => ({ path: `/organizations/${f.org}/credits/adjustments`, body: { amount: 6, reason: 'goodwill' } }),
      effects: (db, f) => ledgerRows(db, f.org),
      mode: 'transaction',
    },
    {
      operation: 'createConversation',
      method: 'post',
      status: 201,
      path: () => '/conversations',
      body: (f) => ({ organization_id: f.org, title: 'Retried' }),
      other: (f) => ({ path: '/conversations', body: { organization_id: f.org, title: 'Retried again' } }),
      effects: (db, f) => count(db('conversations').where({ organization_id: f.org }).count('* as n')),
    },
  ];
}

describe('Idempotency-Key on every operation that creates something or moves credits (issue 19 item 9)', function () {
  this.timeout(120_000);
  let stack: Stack;
  let server: TestServer;
  let db: Db;
  let upstream: FakeUpstream;
  /** While set, the article waits for it: a read-url in flight. */
  let hold: Promise<void> | undefined;

  before(async () => {
    upstream = await startUpstream({
      '/article': (_req, res) => {
        void (hold ?? Promise.resolve()).then(() => {
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          res.end('<html><head><title>Foxes</title></head><body><article><p>Red foxes hunt voles under the snow.</p></article></body></html>');
        });
      },
    });
    stack = await startStack({ WORKER_POLL_INTERVAL_SECONDS: '0.5', OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`, READ_TIMEOUT_MS: '10000' });
    ({ server, db } = stack);
  });
  after(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  async function fixture(): Promise<Fixture> {
    const owner = newUser();
    const admin = newUser();
    const org = await createOrganization(server, owner);
    await addMember(db, org, admin, 'admin');
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 100_000, description: 'Test credits' }));
    const conversation = (await createConversation(server, owner, org, { title: 'Trip' })).id as string;
    const otherConversation = (await createConversation(server, owner, org, { title: 'Other' })).id as string;
    for (const id of [conversation, otherConversation]) {
      const message = await server.request('post', `/conversations/${id}/messages`, { token: owner.token, body: { content: 'How do foxes hunt?' } });
      expect(message.status).to.equal(201);
      await grant(db, org, 'chat_conversation', id, admin, 'editor', owner);
    }
    const task = async () => {
      const res = await server.request('post', '/scheduled-tasks', {
        token: owner.token,
        body: { organization_id: org, title: 'Brief', prompt: 'Three lunch ideas.', schedule: { cron: '0 7 * * *', timezone: 'UTC' } },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      await grant(db, org, 'scheduled_task', res.body.scheduled_task.id, admin, 'editor', owner);
      return res.body.scheduled_task.id as string;
    };
    const customer = await server.request('post', `/organizations/${org}/billing/customer`, {
      token: owner.token,
      body: { name: 'Acme GmbH', email: 'billing@acme.test', address: { line1: 'Main St 1', city: 'Berlin', postal_code: '10115', country: 'DE' } },
    });
    expect(customer.status, JSON.stringify(customer.body)).to.equal(201);
    return { org, owner, admin, conversation, otherConversation, task: await task(), otherTask: await task() };
  }

  const send = (
    c: Case,
    f: Fixture,
    user: TestUser,
    key: string | undefined,
    request: { path: string; body?: Record<string, unknown> | undefined } = { path: c.path(f), body: c.body(f) },
  ) =>
    server.request(c.method, request.path, {
      token: user.token,
      ...(key !== undefined && { headers: { 'idempotency-key': key } }),
      ...(request.body !== undefined && { body: request.body }),
    });

  for (const c of cases(() => upstream)) {
    describe(c.operation, () => {
      let f: Fixture;
      before(async () => {
        f = await fixture();
      });

      it('50 retries with one key: one effect, 50 identical answers, Idempotent-Replayed on all but the first; another body 422; another caller runs their own', async () => {
        const key = `retry-${f.owner.email}-${c.operation}`;
        const before = await c.effects(db, f);
        const first = await send(c, f, f.owner, key);
        expect(first.status, JSON.stringify(first.body)).to.equal(c.status);
        expect(first.headers.get('idempotent-replayed')).to.equal(null);
        const afterFirst = await c.effects(db, f);
        expect(afterFirst, 'the first request did its work').to.be.above(before);

        const retries: ApiResponse[] = [];
        for (let i = 1; i < 50; i++) retries.push(await send(c, f, f.owner, key));
        for (const retry of retries) {
          expect(retry.status).to.equal(c.status);
          expect(retry.body).to.deep.equal(first.body);
          expect(retry.headers.get('idempotent-replayed')).to.equal('true');
        }
        expect(await c.effects(db, f), 'the retries changed nothing').to.equal(afterFirst);

        const reused = await send(c, f, f.owner, key, c.other(f));
        expect(reused.status).to.equal(422);
        expect(reused.body.code).to.equal('idempotency_key_reused');
        expect(reused.body.data.issues).to.deep.equal([{ path: ['Idempotency-Key'], message: reused.body.message }]);
        expect(await c.effects(db, f)).to.equal(afterFirst);

        await c.settle?.(db, f);
        const theirs = await send(c, f, f.admin, key);
        expect(theirs.headers.get('idempotent-replayed')).to.equal(null);
        if (c.otherCallerWrites ?? true) {
          expect(theirs.status, JSON.stringify(theirs.body)).to.equal(c.status);
          expect(await c.effects(db, f), 'their request ran').to.be.above(afterFirst);
        }
        // Their retry replays their own answer, not the first caller's.
        const theirRetry = await send(c, f, f.admin, key);
        if (theirs.status < 300) {
          expect(theirRetry.status).to.equal(theirs.status);
          expect(theirRetry.body).to.deep.equal(theirs.body);
          expect(theirRetry.headers.get('idempotent-replayed')).to.equal('true');
        }

        // Only the key's SHA-256 is stored: the raw key (an e-mail address in it) is nowhere in the table.
        const rows = await db('idempotency_keys').where({ user_id: f.owner.id }).select('*');
        expect(rows.map((row) => row.key_hash)).to.include(sha256(key));
        expect(rows.every((row) => /^[0-9a-f]{64}$/.test(row.key_hash))).to.equal(true);
        const table = JSON.stringify(await db('idempotency_keys').select('*'));
        expect(table).not.to.contain(key);
        expect(table).not.to.contain(f.owner.email);
      });

      it('a request sent again while the first with its key is still running answers 409 naming Idempotency-Key; the first then completes and is replayed', async () => {
        await c.settle?.(db, f);
        const key = `busy-${c.operation}`;
        const request = { path: c.path(f), body: c.busyBody?.(f) ?? c.body(f) };
        // The first request blocks inside its work: the organization's row (every row it writes
        // references the organization), its credit balance and what the operation itself locks
        // are held by this transaction.
        const lock = await db.transaction();
        let first: Promise<ApiResponse> | undefined;
        try {
          await lock.raw('SELECT 1 FROM organizations WHERE id = ? FOR UPDATE', [f.org]);
          await lock.raw('SELECT 1 FROM credit_balances WHERE organization_id = ? FOR UPDATE', [f.org]);
          if (c.busyLocks) await lock.raw(c.busyLocks, { org: f.org, task: f.task, conversation: f.conversation });
          first = send(c, f, f.owner, key, request);
          if (c.mode === 'transaction') {
            // Its transaction holds the key's advisory lock while it waits.
            await eventually('the first request holds its key and waits', async () => {
              const { rows } = await db.raw(
                `SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted)::int AS held,
                        (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')::int AS waiting`,
              );
              return rows[0].held > 0 && rows[0].waiting > 0;
            });
          } else {
            await eventually('the first request recorded its key as in progress', async () =>
              Boolean(
                await db('idempotency_keys')
                  .where({ user_id: f.owner.id, key_hash: sha256(key) })
                  .whereNull('response_status')
                  .first(),
              ),
            );
          }
          const second = await send(c, f, f.owner, key, request);
          expect(second.status, JSON.stringify(second.body)).to.equal(409);
          expect(second.body.code).to.equal('conflict');
          expect(second.body.data.issues[0].path).to.deep.equal(['Idempotency-Key']);
          expect(second.body.message).to.match(/^Idempotency-Key: a request with this key is still in progress/);
        } finally {
          await lock.rollback();
        }
        const done = await first!;
        expect(done.status, JSON.stringify(done.body)).to.equal(c.status);
        const replay = await send(c, f, f.owner, key, request);
        expect(replay.status).to.equal(c.status);
        expect(replay.body).to.deep.equal(done.body);
        expect(replay.headers.get('idempotent-replayed')).to.equal('true');
      });
    });
  }

  describe('runReadUrl while its job is running', () => {
    it('answers 409 to the same key until the read is settled, then replays it; one charge', async () => {
      const f = await fixture();
      const body = { organization_id: f.org, url: `${upstream.url}/article` };
      const request = (key: string) => server.request('post', '/read-url', { token: f.owner.token, headers: { 'idempotency-key': key }, body });
      let release!: () => void;
      hold = new Promise((resolve) => (release = resolve));
      try {
        const first = request('slow-read');
        await eventually('the read is in flight', async () => (await db('metered_calls').where({ organization_id: f.org }).first('id')) !== undefined);
        const stored = await db('idempotency_keys')
          .where({ user_id: f.owner.id, key_hash: sha256('slow-read') })
          .first();
        expect(stored).to.include({ response_status: null, response_body: null });
        const busy = await request('slow-read');
        expect(busy.status).to.equal(409);
        expect(busy.body.data.issues[0].path).to.deep.equal(['Idempotency-Key']);
        release();
        const done = await first;
        expect(done.status, JSON.stringify(done.body)).to.equal(200);
        const replay = await request('slow-read');
        expect(replay.status).to.equal(200);
        expect(replay.body).to.deep.equal(done.body);
        expect(replay.headers.get('idempotent-replayed')).to.equal('true');
        expect(await count(db('metered_calls').where({ organization_id: f.org }).count('* as n'))).to.equal(1);
        expect(await count(db('credit_ledger_entries').where({ organization_id: f.org, kind: 'capture' }).count('* as n'))).to.equal(1);
      } finally {
        release?.();
        hold = undefined;
      }
    });

    it('a read that failed charged nothing and released its key: the retry runs', async () => {
      const f = await fixture();
      const request = (url: string) =>
        server.request('post', '/read-url', {
          token: f.owner.token,
          headers: { 'idempotency-key': 'fails-then-works' },
          body: { organization_id: f.org, url },
        });
      const failed = await request(`${upstream.url}/missing`);
      expect(failed.status, JSON.stringify(failed.body)).to.be.within(400, 599);
      expect(await db('idempotency_keys').where({ user_id: f.owner.id }).first()).to.equal(undefined);
      const again = await request(`${upstream.url}/missing`);
      expect(again.status).to.equal(failed.status);
      expect(again.headers.get('idempotent-replayed')).to.equal(null);
      expect(await count(db('metered_calls').where({ organization_id: f.org }).count('* as n'))).to.equal(2);
    });
  });

  it('a repeated tool_call_id without the same key is billed again (the spec’s rule stands)', async () => {
    const f = await fixture();
    const before = await ledgerRows(db, f.org);
    const search = (key?: string) =>
      server.request('post', '/search', {
        token: f.owner.token,
        ...(key && { headers: { 'idempotency-key': key } }),
        body: { organization_id: f.org, query: 'foxes', tool_call_id: 'same-call' },
      });
    expect((await search()).status).to.equal(200);
    const once = (await ledgerRows(db, f.org)) - before;
    expect((await search()).status).to.equal(200);
    expect((await search('k-1')).status).to.equal(200);
    expect((await search('k-1')).headers.get('idempotent-replayed')).to.equal('true');
    expect((await ledgerRows(db, f.org)) - before).to.equal(3 * once);
    expect(await count(db('metered_calls').where({ organization_id: f.org, tool_call_id: 'same-call' }).count('* as n'))).to.equal(3);
  });

  it('a one-time secret in the first answer is never stored and is left out of the replay (billing portal link)', async () => {
    const f = await fixture();
    const open = () =>
      server.request('post', `/organizations/${f.org}/billing/portal-sessions`, { token: f.owner.token, headers: { 'idempotency-key': 'portal-1' }, body: {} });
    const first = await open();
    expect(first.status, JSON.stringify(first.body)).to.equal(201);
    expect(first.body.url).to.be.a('string');
    const replay = await open();
    expect(replay.status).to.equal(201);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.body).to.deep.equal({ expires_at: first.body.expires_at });
    const stored = await db('idempotency_keys')
      .where({ user_id: f.owner.id, key_hash: sha256('portal-1') })
      .first('response_body');
    expect(stored.response_body).to.deep.equal({ expires_at: first.body.expires_at });
    expect(JSON.stringify(await db('idempotency_keys').select('*'))).not.to.contain(first.body.url);
  });

  it('a request interrupted before its answer was recorded (its lease ended) is never run again: 409 saying its outcome is unknown', async () => {
    const f = await fixture();
    const create = () =>
      server.request('post', '/conversations', {
        token: f.owner.token,
        headers: { 'idempotency-key': 'crashed' },
        body: { organization_id: f.org, title: 'Once' },
      });
    // What a web process that died mid-request leaves behind: the key in progress, its lease over.
    const first = await create();
    expect(first.status).to.equal(201);
    await db('idempotency_keys')
      .where({ user_id: f.owner.id, key_hash: sha256('crashed') })
      .update({ response_status: null, response_body: null, locked_until: db.raw("now() - interval '1 second'") });
    const conversations = await count(db('conversations').where({ organization_id: f.org }).count('* as n'));
    const retry = await create();
    expect(retry.status).to.equal(409);
    expect(retry.body.data.issues[0].path).to.deep.equal(['Idempotency-Key']);
    expect(retry.body.message).to.match(/^Idempotency-Key: the request with this key was interrupted before its answer was recorded/);
    expect(await count(db('conversations').where({ organization_id: f.org }).count('* as n'))).to.equal(conversations);
  });

  it('a key is remembered 24 hours: an older one counts as new even before the hourly job deletes it', async () => {
    const f = await fixture();
    const adjust = () =>
      server.request('post', `/organizations/${f.org}/credits/adjustments`, {
        token: f.owner.token,
        headers: { 'idempotency-key': 'day-old' },
        body: { amount: 3, reason: 'aging' },
      });
    const first = await adjust();
    expect(first.status).to.equal(201);
    await db('idempotency_keys')
      .where({ user_id: f.owner.id, key_hash: sha256('day-old') })
      .update({ created_at: db.raw("now() - interval '24 hours 1 second'") });
    const later = await adjust();
    expect(later.status).to.equal(201);
    expect(later.headers.get('idempotent-replayed')).to.equal(null);
    expect(later.body.transactions[0].id).not.to.equal(first.body.transactions[0].id);
  });

  describe('replay across roles (POST /conversations/{id}/messages of a private conversation)', () => {
    let f: Fixture;
    let creator: TestUser;
    let conversation: string;
    const post = (user: TestUser, key: string) =>
      server.request('post', `/conversations/${conversation}/messages`, {
        token: user.token,
        headers: { 'idempotency-key': key },
        body: { content: 'Same words' },
      });

    before(async () => {
      f = await fixture();
      creator = newUser();
      await addMember(db, f.org, creator, 'member');
      conversation = (await createConversation(server, creator, f.org, { title: 'Private' })).id;
    });

    const roles: { role: string; status: number; arrange(user: TestUser): Promise<void> }[] = [
      { role: 'creator (owner of the conversation)', status: 201, arrange: async () => undefined },
      { role: 'organization owner', status: 201, arrange: async () => undefined },
      { role: 'organization admin', status: 201, arrange: async () => undefined },
      { role: 'member without a grant', status: 404, arrange: async (user) => addMember(db, f.org, user, 'member') },
      {
        role: 'viewer grant',
        status: 403,
        arrange: async (user) => {
          await addMember(db, f.org, user, 'member');
          await grant(db, f.org, 'chat_conversation', conversation, user, 'viewer', creator);
        },
      },
      {
        role: 'editor grant',
        status: 201,
        arrange: async (user) => {
          await addMember(db, f.org, user, 'member');
          await grant(db, f.org, 'chat_conversation', conversation, user, 'editor', creator);
        },
      },
    ];
    for (const { role, status, arrange } of roles) {
      it(`${role}: ${status < 300 ? 'the retry replays their own answer' : `${status} each time, nothing stored`}`, async () => {
        const user = role.startsWith('creator') ? creator : role === 'organization owner' ? f.owner : role === 'organization admin' ? f.admin : newUser();
        await arrange(user);
        const key = `roles-${user.email}`;
        const messages = () => count(db('conversation_messages').where({ conversation_id: conversation }).count('* as n'));
        const before = await messages();
        const first = await post(user, key);
        const retry = await post(user, key);
        expect(first.status, JSON.stringify(first.body)).to.equal(status);
        expect(retry.status).to.equal(status);
        if (status < 300) {
          expect(retry.body).to.deep.equal(first.body);
          expect(retry.headers.get('idempotent-replayed')).to.equal('true');
          expect(await messages()).to.equal(before + 1);
        } else {
          expect(retry.headers.get('idempotent-replayed')).to.equal(null);
          expect(await messages()).to.equal(before);
          expect(await db('idempotency_keys').where({ user_id: user.id }).first()).to.equal(undefined);
        }
      });
    }

    it('removed member: a key answered while they could write replays nothing once they are removed (404)', async () => {
      const user = newUser();
      await addMember(db, f.org, user, 'member');
      await grant(db, f.org, 'chat_conversation', conversation, user, 'editor', creator);
      const first = await post(user, 'removed-1');
      expect(first.status).to.equal(201);
      const removed = await server.request('delete', `/organizations/${f.org}/members/${user.id}`, { token: f.owner.token });
      expect(removed.status).to.equal(204);
      const retry = await post(user, 'removed-1');
      expect(retry.status).to.equal(404);
      expect(retry.headers.get('idempotent-replayed')).to.equal(null);
    });
  });
});
