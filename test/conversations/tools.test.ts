import { expect } from 'chai';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { eventually, isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { addMember, createConversation, createOrganization, createProject, newUser, type TestUser } from '../support/factories.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { follow } from '../support/sse.ts';

/**
 * Tool calls in chat turns with the sandbox model (its rule: each `/tool <name> <json>` line of the
 * user's message is a call of one round), a real web process, pg-boss and a worker: the tree keeps
 * each round, billed tools go through the metered path with the turn's attribution, failures go back
 * to the model, and asset search never returns what the caller cannot read.
 */
describe('chat turns: tool calls (sandbox model)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let worker: WorkerProcess;
  let db: Db;
  let alice: TestUser;
  let bob: TestUser;
  let org: string;

  before(async () => {
    const overrides = { CHAT_SANDBOX_DELAY_MS: '20', GENERATION_SANDBOX_DELAY_MS: '1500', WORKER_POLL_INTERVAL_SECONDS: '0.5' };
    const url = await isolatedDatabase();
    db = createDb(url, { max: 4 });
    server = await startTestServer(overrides, { databaseUrl: url });
    worker = await startWorker(testConfig(overrides), url, createLogger(testConfig(overrides), 'test-worker'));
    alice = newUser();
    bob = newUser();
    org = await createOrganization(server, alice);
    await addMember(db, org, bob);
  });
  after(async () => {
    await worker?.stop();
    await server?.stop();
    await db?.destroy();
  });

  async function turn(content: string, body: Record<string, unknown> = { max_credits: 60 }, user = alice) {
    const conversation = await createConversation(server, user, org, { title: 'Tools' });
    const posted = await server.request('post', `/conversations/${conversation.id}/messages`, { token: user.token, body: { content } });
    expect(posted.status).to.equal(201);
    const started = await server.request('post', `/conversations/${conversation.id}/run`, { token: user.token, body: { model: 'sandbox-chat', ...body } });
    expect(started.status, JSON.stringify(started.body)).to.equal(201);
    return { conversationId: conversation.id as string, question: posted.body.message, run: started.body.run };
  }
  const finished = (id: string) =>
    eventually(`run ${id} finished`, async () => {
      const row = await db('chat_runs').where({ id }).first();
      return row.credits_charged !== null ? row : null;
    });
  const branch = async (conversationId: string, user = alice) => {
    const res = await server.request('get', `/conversations/${conversationId}/messages?limit=50`, { token: user.token });
    expect(res.status).to.equal(200);
    return res.body.items as any[];
  };
  const runOf = async (conversationId: string) => (await server.request('get', `/conversations/${conversationId}/run`, { token: alice.token })).body.run;

  it('one billed tool: the round is kept in the tree, the read is billed once with the turn’s attribution, the stream shows the call', async () => {
    const { conversationId, question, run } = await turn('Find trams\n/tool search {"query":"lisbon trams"}');
    expect(run.tools).to.equal(null);
    expect(run.tool_calls).to.deep.equal([]);
    const stream = await follow(server.url, `/conversations/${conversationId}/run/events`, alice.token);
    const done = await finished(run.id);
    await stream.ended;
    expect(done.status).to.equal('succeeded');

    const items = await branch(conversationId);
    expect(items.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);
    const [, asked, result, answer] = items;
    expect(asked.parent_id).to.equal(question.id);
    expect(asked.tool_calls).to.have.length(1);
    expect(asked.tool_calls[0]).to.deep.include({ name: 'search', arguments: '{"query":"lisbon trams"}' });
    expect(asked.tool_call_id).to.equal(null);
    expect(result).to.include({ parent_id: asked.id, tool_call_id: asked.tool_calls[0].id });
    expect(result.tool_calls).to.equal(null);
    expect(JSON.parse(result.content).query).to.equal('lisbon trams');
    expect(answer).to.include({ id: done.answer_message_id, parent_id: result.id });
    expect(answer.content).to.match(/^\[sandbox answer\] The tools answered: \(1\) \{"query":"lisbon trams"/);
    expect((await server.request('get', `/conversations/${conversationId}`, { token: alice.token })).body).to.include({
      active_leaf_id: answer.id,
      message_count: 4,
    });

    // Billed once through the metered path: 1 credit a call + 1 a page of 10 results.
    const calls = await db('metered_calls').where({ conversation_id: conversationId, operation: 'search' });
    expect(calls).to.have.length(1);
    expect(calls[0]).to.include({
      status: 'succeeded',
      credits_charged: 2,
      tool_call_id: asked.tool_calls[0].id,
      message_id: question.id,
      run_lock: true,
      chat_run_id: run.id,
    });
    const captures = await db('credit_ledger_entries').where({ organization_id: org, kind: 'capture', tool_call_id: asked.tool_calls[0].id });
    expect(captures.map((c) => Number(c.amount))).to.deep.equal([2]);
    const got = await runOf(conversationId);
    expect(got.tool_calls).to.deep.equal([
      {
        tool_call_id: asked.tool_calls[0].id,
        name: 'search',
        round: 1,
        status: 'succeeded',
        arguments: '{"query":"lisbon trams"}',
        credits: 2,
        message_id: result.id,
        approved: null,
        decided_by_id: null,
        decided_at: null,
      },
    ]);
    // The turn's own capture plus the tool's stay within max_credits.
    expect(done.credits_charged + 2).to.be.at.most(60);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);

    const names = stream.events.map((e) => e.event);
    expect(names).to.include.members(['tool_call', 'tool_result', 'done']);
    expect(names.indexOf('tool_call')).to.be.lessThan(names.indexOf('tool_result'));
    expect(names.at(-1)).to.equal('done');
    const started = stream.events.find((e) => e.event === 'tool_call')!.data;
    expect(started).to.deep.equal({ run_id: run.id, tool_call_id: asked.tool_calls[0].id, name: 'search', round: 1, arguments: '{"query":"lisbon trams"}' });
    const ended = stream.events.find((e) => e.event === 'tool_result')!.data;
    expect(ended).to.include({ run_id: run.id, tool_call_id: asked.tool_calls[0].id, status: 'succeeded', credits: 2 });

    // A fork at the answer keeps the tool round (copies, with their calls and ids).
    const fork = await server.request('post', `/conversations/${conversationId}/fork`, { token: alice.token, body: { message_id: answer.id } });
    expect(fork.status).to.equal(201);
    const copied = await branch(fork.body.id);
    expect(copied.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);
    expect(copied[1].tool_calls).to.deep.equal(asked.tool_calls);
    expect(copied[2].tool_call_id).to.equal(asked.tool_calls[0].id);
  });

  it('parallel tools in one round; failures (unknown tool, bad arguments, a failed paid read) go back to the model and cost nothing', async () => {
    const { conversationId, run } = await turn(
      [
        '/tool search {"query":"harbour"}',
        '/tool no_such_tool {}',
        '/tool search {"limit":"many"}',
        '/tool search {"query":"sandbox-timeout"}',
        '/tool search_assets {"query":"nothing-matches-this"}',
      ].join('\n'),
    );
    const done = await finished(run.id);
    expect(done.status).to.equal('succeeded');
    const items = await branch(conversationId);
    expect(items.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'tool', 'tool', 'tool', 'tool', 'assistant']);
    const asked = items[1].tool_calls;
    expect(asked.map((c: any) => c.name)).to.deep.equal(['search', 'no_such_tool', 'search', 'search', 'search_assets']);
    // Results in the order asked, each answering its call.
    expect(items.slice(2, 7).map((m) => m.tool_call_id)).to.deep.equal(asked.map((c: any) => c.id));
    const [ok, unknown, invalid, failedRead, assets] = items.slice(2, 7).map((m) => m.content);
    expect(JSON.parse(ok).query).to.equal('harbour');
    expect(unknown).to.equal('Error: no tool named "no_such_tool" is offered in this turn');
    expect(invalid).to.match(/^Error: arguments: /);
    expect(failedRead).to.match(/^Error: search: .*\(timeout\); nothing was charged$/);
    expect(JSON.parse(assets)).to.deep.equal({ items: [] });
    const got = await runOf(conversationId);
    expect(got.tool_calls.map((c: any) => [c.name, c.status, c.credits, c.round])).to.deep.equal([
      ['search', 'succeeded', 2, 1],
      ['no_such_tool', 'failed', 0, 1],
      ['search', 'failed', 0, 1],
      ['search', 'failed', 0, 1],
      ['search_assets', 'succeeded', 0, 1],
    ]);
    const reads = await db('metered_calls').where({ conversation_id: conversationId }).whereNot({ operation: 'chat_run' }).orderBy('created_at');
    expect(reads.map((c) => [c.status, c.credits_charged]).sort()).to.deep.equal([
      ['failed', 0],
      ['succeeded', 2],
    ]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('a run’s `tools` narrows the set (unknown names 400); `[]` offers none', async () => {
    const conversation = await createConversation(server, alice, org, { title: 'Narrow' });
    await server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: '/tool search {"query":"x"}' } });
    const refused = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { tools: ['search', 'nope'] } });
    expect(refused.status).to.equal(400);
    expect(refused.body.data.issues[0].path).to.deep.equal(['tools', 1]);
    const malformed = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { tools: ['has space'] } });
    expect(malformed.status).to.equal(400);

    const { conversationId, run } = await turn('/tool search {"query":"x"}', { tools: ['search_assets'] });
    expect(run.tools).to.deep.equal(['search_assets']);
    await finished(run.id);
    const items = await branch(conversationId);
    expect(items[2].content).to.equal('Error: no tool named "search" is offered in this turn');
    expect(await db('metered_calls').where({ conversation_id: conversationId, operation: 'search' })).to.have.length(0);

    const none = await turn('/tool search {"query":"x"}', { tools: [] });
    await finished(none.run.id);
    expect((await branch(none.conversationId)).map((m) => m.role)).to.deep.equal(['user', 'assistant']);
  });

  it('a conversation’s `tools` and its projects’ `chat_tools` narrow the set too: a turn offers what all of them allow', async () => {
    const project = await createProject(server, alice, org, { title: 'Narrow project' });
    const badProject = await server.request('patch', `/projects/${project.id}`, { token: alice.token, body: { chat_tools: ['search', 'nope'] } });
    expect(badProject.status).to.equal(400);
    expect(badProject.body.data.issues[0].path).to.deep.equal(['chat_tools', 1]);
    const narrowed = await server.request('patch', `/projects/${project.id}`, { token: alice.token, body: { chat_tools: ['search', 'search_assets'] } });
    expect(narrowed.status, JSON.stringify(narrowed.body)).to.equal(200);
    expect(narrowed.body.chat_tools).to.deep.equal(['search', 'search_assets']);

    const conversation = await createConversation(server, alice, org, { title: 'Narrowed', project_id: project.id });
    expect(conversation.tools).to.equal(null);
    const badConversation = await server.request('patch', `/conversations/${conversation.id}`, { token: alice.token, body: { tools: ['nope'] } });
    expect(badConversation.status).to.equal(400);
    expect(badConversation.body.data.issues[0].path).to.deep.equal(['tools', 0]);
    const set = await server.request('patch', `/conversations/${conversation.id}`, { token: alice.token, body: { tools: ['search_assets', 'read_url'] } });
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    expect(set.body.tools).to.deep.equal(['search_assets', 'read_url']);

    // The project allows search and search_assets, the conversation search_assets and read_url: only search_assets is offered.
    const content = ['/tool search {"query":"x"}', '/tool search_assets {"query":"x"}', '/tool read_url {"url":"https://example.com/"}'].join('\n');
    await server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content } });
    const started = await server.request('post', `/conversations/${conversation.id}/run`, {
      token: alice.token,
      body: { model: 'sandbox-chat', max_credits: 60 },
    });
    expect(started.status, JSON.stringify(started.body)).to.equal(201);
    await finished(started.body.run.id);
    const results = (await branch(conversation.id)).filter((m) => m.role === 'tool').map((m) => m.content);
    expect(results).to.deep.equal([
      'Error: no tool named "search" is offered in this turn',
      JSON.stringify({ items: [] }),
      'Error: no tool named "read_url" is offered in this turn',
    ]);
    expect(await db('metered_calls').where({ conversation_id: conversation.id }).whereNot({ operation: 'chat_run' })).to.have.length(0);

    // A fork keeps the setting; null lifts it (the project's still narrows).
    const leaf = (await branch(conversation.id)).at(-1).id;
    const fork = await server.request('post', `/conversations/${conversation.id}/fork`, { token: alice.token, body: { message_id: leaf } });
    expect(fork.status).to.equal(201);
    expect(fork.body.tools).to.deep.equal(['search_assets', 'read_url']);
    const cleared = await server.request('patch', `/conversations/${conversation.id}`, { token: alice.token, body: { tools: null } });
    expect(cleared.body.tools).to.equal(null);
    await server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content } });
    const again = await server.request('post', `/conversations/${conversation.id}/run`, {
      token: alice.token,
      body: { model: 'sandbox-chat', max_credits: 60 },
    });
    expect(again.status).to.equal(201);
    await finished(again.body.run.id);
    const later = (await branch(conversation.id)).filter((m) => m.role === 'tool').slice(3);
    expect(later.map((m) => m.content.startsWith('Error: no tool named'))).to.deep.equal([false, false, true]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('a conversation’s `approval_tools` make a built-in tool wait for approval: the turn stops, the call runs once approved, billed once', async () => {
    const conversation = await createConversation(server, alice, org, { title: 'Approve search' });
    const refused = await server.request('patch', `/conversations/${conversation.id}`, { token: alice.token, body: { approval_tools: ['search', 'nope'] } });
    expect(refused.status).to.equal(400);
    expect(refused.body.data.issues[0].path).to.deep.equal(['approval_tools', 1]);
    const set = await server.request('patch', `/conversations/${conversation.id}`, { token: alice.token, body: { approval_tools: ['search'] } });
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    expect(set.body.approval_tools).to.deep.equal(['search']);

    await server.request('post', `/conversations/${conversation.id}/messages`, {
      token: alice.token,
      body: { content: '/tool search {"query":"approved harbours"}\n/tool search_assets {"query":"harbour"}' },
    });
    const started = await server.request('post', `/conversations/${conversation.id}/run`, {
      token: alice.token,
      body: { model: 'sandbox-chat', max_credits: 60 },
    });
    expect(started.status).to.equal(201);
    const waiting = await eventually('the turn waits for approval', async () => {
      const got = await runOf(conversation.id);
      return got.status === 'awaiting_approval' ? got : null;
    });
    // Only search waits; the free asset search ran; nothing was billed yet.
    expect(waiting.tool_calls.map((c: any) => [c.name, c.status])).to.deep.equal([
      ['search', 'awaiting_approval'],
      ['search_assets', 'succeeded'],
    ]);
    expect(await db('metered_calls').where({ conversation_id: conversation.id, operation: 'search' })).to.have.length(0);
    const approved = await server.request('post', `/conversations/${conversation.id}/run/approvals`, {
      token: alice.token,
      body: { decisions: [{ tool_call_id: waiting.tool_calls[0].tool_call_id, approve: true }] },
    });
    expect(approved.status, JSON.stringify(approved.body)).to.equal(200);
    const done = await finished(started.body.run.id);
    expect(done.status).to.equal('succeeded');
    const reads = await db('metered_calls').where({ conversation_id: conversation.id, operation: 'search' });
    expect(reads.map((r) => [r.status, r.credits_charged, r.tool_call_id])).to.deep.equal([['succeeded', 2, waiting.tool_calls[0].tool_call_id]]);
    expect((await runOf(conversation.id)).tool_calls.map((c: any) => [c.name, c.status, c.credits])).to.deep.equal([
      ['search', 'succeeded', 2],
      ['search_assets', 'succeeded', 0],
    ]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('asset search returns only assets the caller can read: not another member’s private one, not after a revoked grant, not a deleted one', async () => {
    const create = async (user: TestUser, title: string, visibility: string) => {
      const res = await server.request('post', '/assets', {
        token: user.token,
        body: { organization_id: org, type: 'document', title, content: `Quokka notes: ${title}`, visibility },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      return res.body.id as string;
    };
    // Carol and Bob are plain members (an owner like Alice reads every asset of the organization).
    const carol = newUser();
    await addMember(db, org, carol);
    const mine = await create(carol, 'Quokka mine', 'private');
    const shared = await create(bob, 'Quokka shared', 'workspace');
    const secret = await create(bob, 'Quokka secret', 'private');
    const revoked = await create(bob, 'Quokka revoked', 'private');
    const deleted = await create(carol, 'Quokka deleted', 'private');
    const grant = await server.request('post', `/access/asset/${revoked}/grants`, { token: bob.token, body: { user_id: carol.id, role: 'viewer' } });
    expect(grant.status, JSON.stringify(grant.body)).to.equal(201);
    expect((await server.request('delete', `/access/asset/${revoked}/grants/${grant.body.id}`, { token: bob.token })).status).to.equal(204);
    expect((await server.request('delete', `/assets/${deleted}`, { token: carol.token })).status).to.equal(204);

    const { conversationId, run } = await turn('/tool search_assets {"query":"quokka","limit":20}', { max_credits: 60 }, carol);
    await finished(run.id);
    const found = JSON.parse((await branch(conversationId, carol))[2].content).items;
    expect(found.map((a: any) => a.asset_id).sort()).to.deep.equal([mine, shared].sort());
    expect(found.map((a: any) => a.asset_id)).not.to.include.members([secret, revoked, deleted]);
    expect(found[0]).to.have.keys(['asset_id', 'title', 'type', 'snippet', 'project_id']);
    // The assets' full-text search: the match highlighted in the snippet; no project holds the conversation, so the organization was searched.
    expect(found.find((a: any) => a.asset_id === shared)).to.deep.include({ project_id: null });
    expect(found.find((a: any) => a.asset_id === shared).snippet).to.include('<mark>Quokka</mark> notes');

    // Bob reads his own private ones, not Carol's.
    const bobs = await turn('/tool search_assets {"query":"quokka","limit":20}', { max_credits: 60 }, bob);
    await finished(bobs.run.id);
    const bobFound = JSON.parse((await branch(bobs.conversationId, bob))[2].content).items.map((a: any) => a.asset_id);
    expect(bobFound.sort()).to.deep.equal([shared, secret, revoked].sort());
  });

  it('asset search looks in the conversation’s projects first: a project’s asset comes before better matches elsewhere, marked with its project', async () => {
    const project = await createProject(server, alice, org, { title: 'Wombat project' });
    const create = async (title: string, content: string, projectId?: string) => {
      const res = await server.request('post', '/assets', {
        token: alice.token,
        body: { organization_id: org, type: 'document', title, content, visibility: 'workspace', ...(projectId && { project_id: projectId }) },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      return res.body.id as string;
    };
    // Outside the project, a far better match (the word in its title and all over its text).
    const elsewhere = await create('Wombat wombat wombat', 'Wombat wombat wombat wombat wombat.');
    const inProject = await create('Burrow notes', 'One wombat was seen.', project.id);
    const conversation = await createConversation(server, alice, org, { title: 'Search', project_id: project.id });
    await server.request('post', `/conversations/${conversation.id}/messages`, {
      token: alice.token,
      body: { content: '/tool search_assets {"query":"wombat","limit":1}\n/tool search_assets {"query":"wombat","limit":2}' },
    });
    const started = await server.request('post', `/conversations/${conversation.id}/run`, {
      token: alice.token,
      body: { model: 'sandbox-chat', max_credits: 60 },
    });
    expect(started.status).to.equal(201);
    await finished(started.body.run.id);
    const [one, two] = (await branch(conversation.id)).filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content).items);
    expect(one.map((hit: any) => [hit.asset_id, hit.project_id])).to.deep.equal([[inProject, project.id]]);
    expect(two.map((hit: any) => [hit.asset_id, hit.project_id])).to.deep.equal([
      [inProject, project.id],
      [elsewhere, null],
    ]);
  });

  const chatJobsOf = (runId: string) =>
    db('pgboss.job').where({ name: 'conversation.chat-run.v1' }).whereRaw(`data->>'run_id' = ?`, [runId]).orderBy('created_on').select('state');

  it('image generation: the turn’s job ends while the generation runs (no slot held), and the generation’s end continues the turn', async () => {
    const { conversationId, question, run } = await turn('/tool generate_image {"prompt":"a red fox in snow"}');
    // While the generation runs, the turn holds the lock but no chat job is active.
    await eventually('the turn waits for its generation', async () => {
      const jobs = await chatJobsOf(run.id);
      const generation = await db('generations').where({ conversation_id: conversationId }).first();
      return jobs.length === 1 && jobs[0].state === 'completed' && generation && ['queued', 'running'].includes(generation.status);
    });
    expect((await db('chat_runs').where({ id: run.id }).first()).status).to.equal('running');
    expect((await db('conversations').where({ id: conversationId }).first()).active_run_id).to.equal(run.id);

    const done = await finished(run.id);
    expect(done.status).to.equal('succeeded');
    expect((await chatJobsOf(run.id)).map((j) => j.state)).to.deep.equal(['completed', 'completed']);
    const items = await branch(conversationId);
    expect(items.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);
    const result = JSON.parse(items[2].content);
    const generation = await db('generations').where({ id: result.generation_id }).first();
    expect(generation.status).to.equal('succeeded');
    expect(result.asset_ids).to.deep.equal(generation.asset_ids);
    expect(result.asset_ids.length).to.be.greaterThan(0);
    const call = await db('metered_calls').where({ id: generation.call_id }).first();
    expect(call).to.include({ status: 'succeeded', tool_call_id: items[1].tool_calls[0].id, message_id: question.id, run_lock: true, chat_run_id: run.id });
    const got = await runOf(conversationId);
    expect(got.tool_calls).to.deep.equal([
      {
        tool_call_id: items[1].tool_calls[0].id,
        name: 'generate_image',
        round: 1,
        status: 'succeeded',
        arguments: '{"prompt":"a red fox in snow"}',
        credits: call.credits_charged,
        message_id: items[2].id,
        approved: null,
        decided_by_id: null,
        decided_at: null,
      },
    ]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('stopped while waiting for a generation: the turn ends at once, the generation is not charged (run lock), its continuation does nothing', async () => {
    const { conversationId, run } = await turn('/tool generate_image {"prompt":"a blue whale"}');
    const generation = await eventually('the generation runs', async () => {
      const row = await db('generations').where({ conversation_id: conversationId }).first();
      const jobs = await chatJobsOf(run.id);
      return row && jobs.length === 1 && jobs[0].state === 'completed' ? row : null;
    });
    expect((await server.request('delete', `/conversations/${conversationId}/run`, { token: alice.token })).status).to.equal(204);
    const stopped = await db('chat_runs').where({ id: run.id }).first();
    expect(stopped.status).to.equal('stopped');
    expect((await db('conversations').where({ id: conversationId }).first()).active_run_id).to.equal(null);
    const call = await eventually('the generation settled', async () => {
      const row = await db('metered_calls').where({ id: generation.call_id }).first();
      return row.status !== 'queued' && row.status !== 'running' ? row : null;
    });
    expect(call).to.include({ status: 'refused', credits_charged: 0 });
    await eventually('its continuation ran', async () => (await chatJobsOf(run.id)).length === 2 && (await chatJobsOf(run.id))[1].state === 'completed');
    expect((await db('chat_runs').where({ id: run.id }).first()).status).to.equal('stopped');
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });
});
