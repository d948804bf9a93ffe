import { expect } from 'chai';
import { connectionBudget } from '../../src/db/budget.ts';
import { eventually } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { ApiResponse } from '../support/server.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

/**
 * No transaction waits for a second connection: 50 concurrent starts of each write that opens a
 * transaction, against a web process on the default pool (10 connections, pg-boss on it too), all
 * answer their 2xx — from one organization and from 50. A start that held its transaction's
 * connection while waiting for another would exhaust the pool at 10 and wait out knex's acquire
 * timeout (503); the transaction guard (on for the suite) fails such a statement at once (500).
 */
const N = 50;

describe('50 concurrent starts of each transactional write (default web pool)', function () {
  this.timeout(120_000);
  let stack: Stack;
  let upstream: FakeUpstream;
  /** Who writes: one owner of one organization N times, or N owners of N organizations. */
  const writers: Record<'one organization' | '50 organizations', { user: TestUser; org: string }[]> = { 'one organization': [], '50 organizations': [] };

  before(async () => {
    upstream = await startUpstream({
      '/note.txt': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('a note');
      },
    });
    const overrides = {
      STARTER_CREDITS: '1000000',
      OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`,
      CHAT_SANDBOX_DELAY_MS: '0',
      GENERATION_SANDBOX_DELAY_MS: '0',
      WORKER_POLL_INTERVAL_SECONDS: '0.5',
    };
    expect(connectionBudget(testConfig(overrides), 'web')).to.include({ knex: 10, boss: 0 });
    // A worker with room for the 100 turns the approvals need (its pool sized apart from its slots).
    stack = await startStack(overrides, { WORKER_CONCURRENCY: '16', JOB_ORGANIZATION_SHARE: '0.95', DB_POOL_MAX: '24' });
    const owner = newUser();
    const org = await createOrganization(stack.server, owner);
    writers['one organization'] = Array.from({ length: N }, () => ({ user: owner, org }));
    writers['50 organizations'] = await Promise.all(
      Array.from({ length: N }, async () => {
        const user = newUser();
        return { user, org: await createOrganization(stack.server, user) };
      }),
    );
    await startTurnsAwaitingApproval();
  });
  /** 50 turns of each kind of writer waiting for the approval of their search, started before the other writes queue work. */
  const awaiting = {} as Record<keyof typeof writers, { who: { user: TestUser; org: string }[]; ids: string[]; calls: string[] }>;
  async function startTurnsAwaitingApproval() {
    for (const from of ['one organization', '50 organizations'] as const) {
      const who = writers[from];
      const ids = await conversations(who, { approval_tools: ['search'] }, '/tool search {"query":"approved harbours"}');
      const started = await Promise.all(ids.map((id, i) => post(who[i]!.user, `/conversations/${id}/run`, { model: 'sandbox-chat', max_credits: 60 })));
      expect(statuses(started)).to.deep.equal(all(201));
      awaiting[from] = { who, ids, calls: [] };
    }
    const conversationIds = Object.values(awaiting).flatMap(({ ids }) => ids);
    await eventually(
      `the ${conversationIds.length} turns wait for approval`,
      async () => {
        const waiting = await stack
          .db('chat_runs')
          .whereIn('conversation_id', conversationIds)
          .whereNotNull('awaiting_approval_until')
          .count<{ count: number }[]>({ count: '*' });
        return waiting[0]!.count === conversationIds.length;
      },
      { everyMs: 250, timeoutMs: 90_000 },
    );
    for (const { who, ids, calls } of Object.values(awaiting)) {
      const runs = await Promise.all(
        ids.map(async (id, i) => (await stack.server.request('get', `/conversations/${id}/run`, { token: who[i]!.user.token })).body.run),
      );
      expect(runs.map((run) => run.status)).to.deep.equal(all('awaiting_approval'));
      calls.push(...runs.map((run) => run.tool_calls[0].tool_call_id as string));
    }
  }
  after(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  const post = (by: TestUser, path: string, body: unknown) => stack.server.request('post', path, { token: by.token, body });
  /** One conversation per writer, with a user message to answer. */
  const conversations = (who: { user: TestUser; org: string }[], change: Record<string, unknown> | null = null, content = 'Hello there') =>
    Promise.all(
      who.map(async ({ user, org }) => {
        const conversation = await createConversation(stack.server, user, org);
        if (change) {
          const changed = await stack.server.request('patch', `/conversations/${conversation.id}`, { token: user.token, body: change });
          expect(changed.status, JSON.stringify(changed.body)).to.equal(200);
        }
        const message = await post(user, `/conversations/${conversation.id}/messages`, { content });
        expect(message.status, JSON.stringify(message.body)).to.equal(201);
        return conversation.id as string;
      }),
    );
  const statuses = (answers: ApiResponse[]) =>
    answers.map((answer) => (answer.status >= 500 ? `${answer.status} ${JSON.stringify(answer.body)}` : answer.status));
  const all = <T>(status: T) => Array.from({ length: N }, () => status);

  for (const from of ['one organization', '50 organizations'] as const) {
    describe(`from ${from}`, () => {
      it('chat runs: POST /conversations/{id}/run on 50 conversations → 201 each', async () => {
        const who = writers[from];
        const ids = await conversations(who);
        const answers = await Promise.all(ids.map((id, i) => post(who[i]!.user, `/conversations/${id}/run`, { model: 'sandbox-chat', max_credits: 20 })));
        expect(statuses(answers)).to.deep.equal(all(201));
        expect(new Set(answers.map((answer) => answer.body.run.id)).size).to.equal(N);
      });

      it('messages: POST /conversations/{id}/messages on 50 conversations → 201 each', async () => {
        const who = writers[from];
        const ids = await Promise.all(who.map(async ({ user, org }) => (await createConversation(stack.server, user, org)).id as string));
        const answers = await Promise.all(ids.map((id, i) => post(who[i]!.user, `/conversations/${id}/messages`, { content: `Message ${i}` })));
        expect(statuses(answers)).to.deep.equal(all(201));
        const active = await stack.db('conversations').whereIn('id', ids).whereNotNull('active_leaf_id').count<{ count: number }[]>({ count: '*' });
        expect(active[0]!.count).to.equal(N);
      });

      it('generations: POST /generations → 201 each', async () => {
        const answers = await Promise.all(
          writers[from].map(({ user, org }, i) => post(user, '/generations', { organization_id: org, kind: 'image', prompt: `A fox, take ${i}` })),
        );
        expect(statuses(answers)).to.deep.equal(all(201));
        expect(answers.map((answer) => answer.body.generation.status)).to.deep.equal(Array.from({ length: N }, () => 'queued'));
      });

      it('link imports: POST /assets/imports/link → 201 each, in progress', async () => {
        const answers = await Promise.all(
          writers[from].map(({ user, org }) => post(user, '/assets/imports/link', { organization_id: org, url: `${upstream.url}/note.txt` })),
        );
        expect(statuses(answers)).to.deep.equal(all(201));
        expect(answers.map((answer) => answer.body.upload_file_state)).to.deep.equal(Array.from({ length: N }, () => 'in_progress'));
      });

      it('uploads: POST /assets/uploads → 201 each, with its tus upload', async () => {
        const answers = await Promise.all(
          writers[from].map(({ user, org }, i) =>
            post(user, '/assets/uploads', { organization_id: org, filename: `notes-${i}.txt`, mime_type: 'text/plain', size: 12 }),
          ),
        );
        expect(statuses(answers)).to.deep.equal(all(201));
        expect(answers.every((answer) => typeof answer.body.upload.url === 'string')).to.equal(true);
      });

      it('metered reads: POST /search → 200 each, charged', async () => {
        const answers = await Promise.all(
          writers[from].map(({ user, org }, i) => post(user, '/search', { organization_id: org, query: `harbour foxes ${i}` })),
        );
        expect(statuses(answers)).to.deep.equal(all(200));
        expect(answers.every((answer) => answer.body.credits_charged > 0)).to.equal(true);
      });

      it('approvals: POST /conversations/{id}/run/approvals on 50 waiting turns → 200 each', async () => {
        const { who, ids, calls } = awaiting[from];
        const answers = await Promise.all(
          ids.map((id, i) => post(who[i]!.user, `/conversations/${id}/run/approvals`, { decisions: [{ tool_call_id: calls[i], approve: true }] })),
        );
        expect(statuses(answers)).to.deep.equal(all(200));
      });
    });
  }
});
