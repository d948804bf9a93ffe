import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { countTokens } from 'gpt-tokenizer';
import { droppedNote, fitPrompt, type PromptMessage, toolsTokens } from '../../src/conversations/context/window.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { sandboxAnswer } from '../../src/providers/chat/index.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { eventually, isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { addMember, createConversation, createOrganization, createProject, createSkill, newUser, type TestUser } from '../support/factories.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { type FakeUpstream, readJson, startUpstream } from '../support/upstream.ts';

/** Counted as OpenAI counts a chat prompt (3 framing tokens a message, 3 priming the reply), with the same tokenizer, independently of the code under test. */
const tokensOf = (m: PromptMessage) => {
  const { role, content, ...rest } = m as PromptMessage & Record<string, unknown>;
  return 3 + countTokens(role) + countTokens(content ?? '') + (Object.keys(rest).length > 0 ? countTokens(JSON.stringify(rest)) : 0);
};
const promptOf = (messages: PromptMessage[]) => messages.reduce((sum, m) => sum + tokensOf(m), 3);
const words = (n: number, count: number) => Array.from({ length: count }, (_, i) => `word${n}x${i}`).join(' ');
const knowledgeOf = (projectTitle: string, skillName: string, body: string) =>
  `Knowledge from the project "${projectTitle}" (skill "${skillName}"):\n\n${body}`;

/** A world for one describe: its own database, web process and in-process worker (sandbox, or the HTTP adapter when `chatUrl`). */
function world(chatUrl?: () => string) {
  const w = {} as { server: TestServer; worker: WorkerProcess; db: Db; owner: TestUser; bob: TestUser; carol: TestUser; org: string };
  before(async () => {
    const overrides = { WORKER_POLL_INTERVAL_SECONDS: '0.5', ...(chatUrl && { CHAT_API_URL: chatUrl(), CHAT_API_KEY: 'sk-test-context' }) };
    const url = await isolatedDatabase();
    w.db = createDb(url, { max: 3 });
    w.server = await startTestServer(overrides, { databaseUrl: url });
    const config = testConfig(overrides);
    w.worker = await startWorker(config, url, createLogger(config, 'test-worker'));
    w.owner = newUser();
    w.org = await createOrganization(w.server, w.owner);
    // Plain members: unlike the owner, they read only what is theirs or shared with them.
    w.bob = newUser();
    w.carol = newUser();
    await addMember(w.db, w.org, w.bob);
    await addMember(w.db, w.org, w.carol);
  });
  after(async () => {
    await w.worker?.stop();
    await w.server?.stop();
    await w.db?.destroy();
  });
  return w;
}

/** A conversation of `by` whose branch is `messages` (written directly: a long history, tool results), its last message the active leaf. */
async function conversationWith(w: ReturnType<typeof world>, by: TestUser, messages: PromptMessage[], fields: Record<string, unknown> = {}) {
  const conversation = await createConversation(w.server, by, w.org, fields);
  let parent: string | null = null;
  for (const m of messages) {
    const [row] = (await w
      .db('conversation_messages')
      .insert({
        conversation_id: conversation.id,
        organization_id: w.org,
        parent_id: parent,
        role: m.role,
        content: m.content,
        created_by_id: m.role === 'user' ? by.id : null,
      })
      .returning('id')) as { id: string }[];
    parent = row!.id;
  }
  await w.db('conversations').where({ id: conversation.id }).update({ active_leaf_id: parent, message_count: messages.length, last_message_at: w.db.fn.now() });
  return conversation as { id: string };
}

async function runToEnd(w: ReturnType<typeof world>, by: TestUser, conversationId: string, body: Record<string, unknown>) {
  const started = await w.server.request('post', `/conversations/${conversationId}/run`, { token: by.token, body });
  expect(started.status, JSON.stringify(started.body)).to.equal(201);
  const id = started.body.run.id as string;
  await eventually(`run ${id} ended`, async () => ((await w.db('chat_runs').where({ id }).first()).credits_charged !== null ? true : null));
  const got = await w.server.request('get', `/conversations/${conversationId}/run`, { token: by.token });
  expect(got.status).to.equal(200);
  return got.body.run;
}

/** A project of `by` whose knowledge is a skill of `by` with `body`, set through PATCH /projects. */
async function projectWithKnowledge(w: ReturnType<typeof world>, by: TestUser, body: string, title = 'Spring launch', name = 'Brand book') {
  const project = await createProject(w.server, by, w.org, { title });
  const skill = await createSkill(w.server, by, w.org, { name, body });
  const patched = await w.server.request('patch', `/projects/${project.id}`, { token: by.token, body: { knowledge_skill_id: skill.id } });
  expect(patched.status).to.equal(200);
  expect(patched.body.knowledge_skill_id).to.equal(skill.id);
  return { project, skill };
}

const turn = (n: number, count: number): PromptMessage => ({ role: n % 2 === 0 ? 'user' : 'assistant', content: `Message ${n}: ${words(n, count)}` });

describe('chat turn context over the OpenAI-compatible adapter (knowledge, context window)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  /** Every request body the fake chat service received, in order. */
  const received: any[] = [];
  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    received.push(await readJson(req));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'Noted.' } }] })}\n\n`);
    res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 100, completion_tokens: 2 } })}\n\n`);
    res.end('data: [DONE]\n\n');
  };
  before(async () => {
    upstream = await startUpstream({ '/v1/chat/completions': (req, res) => void answer(req, res) });
  });
  after(async () => upstream?.close());
  const w = world(() => upstream.url);

  /** What the tools a request offered cost, counted as the turn counts them (name, description, parameters). */
  const toolsTokensOf = (request: { tools?: { function: { name: string; description: string; parameters: unknown } }[] }) =>
    toolsTokens((request.tools ?? []).map(({ function: { name, description, parameters } }) => ({ name, description, parameters })));

  it('the project’s knowledge skill is the turn’s system context: the exact request the chat service receives', async () => {
    const { project, skill } = await projectWithKnowledge(w, w.bob, 'Our brand colour is teal. Never say "cheap".');
    const conversation = await createConversation(w.server, w.bob, w.org, { project_id: project.id });
    const question = 'Write a tagline for the spring launch.';
    expect((await w.server.request('post', `/conversations/${conversation.id}/messages`, { token: w.bob.token, body: { content: question } })).status).to.equal(
      201,
    );
    const before = received.length;
    const run = await runToEnd(w, w.bob, conversation.id, { model: 'gpt-4o-mini', max_credits: 50 });
    expect(run.status).to.equal('succeeded');
    expect(received.length).to.equal(before + 1);
    const messages = [
      { role: 'system', content: knowledgeOf('Spring launch', 'Brand book', 'Our brand colour is teal. Never say "cheap".') },
      { role: 'user', content: question },
    ];
    // The workspace's tools are offered too (their definitions were fitted around: ./context/window.ts reservedTokens).
    const { tools, ...request } = received[before] as { tools?: unknown[] };
    expect(request).to.deep.equal({ model: 'gpt-4o-mini', messages, stream: true, stream_options: { include_usage: true } });
    expect(tools).to.be.an('array').that.is.not.empty;
    expect(run.context).to.deep.equal({
      window: 128000,
      tokens: promptOf(messages as PromptMessage[]),
      answer_tokens: 1024,
      messages: 1,
      dropped_messages: 0,
      truncated_messages: 0,
      system_truncated: false,
      tools_tokens: toolsTokensOf(received[before]),
      knowledge: [{ project_id: project.id, skill_id: skill.id, status: 'injected' }],
    });
    expect(await reconcileCredits(w.db, w.org)).to.deep.equal([]);

    // The skill in the trash: the next turn goes without it, and says so.
    expect((await w.server.request('delete', `/skills/${skill.id}`, { token: w.bob.token })).status).to.equal(204);
    expect(
      (await w.server.request('post', `/conversations/${conversation.id}/messages`, { token: w.bob.token, body: { content: 'Another?' } })).status,
    ).to.equal(201);
    const next = await runToEnd(w, w.bob, conversation.id, { model: 'gpt-4o-mini', max_credits: 50 });
    expect(next.status).to.equal('succeeded');
    expect(received[before + 1].messages).to.deep.equal([
      { role: 'user', content: question },
      { role: 'assistant', content: 'Noted.' },
      { role: 'user', content: 'Another?' },
    ]);
    expect(next.context.knowledge).to.deep.equal([{ project_id: project.id, skill_id: skill.id, status: 'deleted' }]);
  });

  it('a conversation in several projects: the project it was created in first, then those it was filed into; a skill named twice is sent once', async () => {
    const origin = await projectWithKnowledge(w, w.bob, 'Origin facts.', 'Origin', 'Origin facts');
    const filed = await createProject(w.server, w.bob, w.org, { title: 'Filed into' });
    const filedSkill = await createSkill(w.server, w.bob, w.org, { name: 'Filed facts', body: 'Filed facts.' });
    expect((await w.server.request('patch', `/projects/${filed.id}`, { token: w.bob.token, body: { knowledge_skill_id: filedSkill.id } })).status).to.equal(
      200,
    );
    const again = await createProject(w.server, w.bob, w.org, { title: 'Same skill again' });
    expect((await w.server.request('patch', `/projects/${again.id}`, { token: w.bob.token, body: { knowledge_skill_id: origin.skill.id } })).status).to.equal(
      200,
    );
    const conversation = await createConversation(w.server, w.bob, w.org, { project_id: origin.project.id });
    for (const project of [again, filed]) {
      const res = await w.server.request('post', `/projects/${project.id}/conversations`, { token: w.bob.token, body: { conversation_id: conversation.id } });
      expect(res.status).to.equal(201);
    }
    expect((await w.server.request('post', `/conversations/${conversation.id}/messages`, { token: w.bob.token, body: { content: 'Facts?' } })).status).to.equal(
      201,
    );
    const before = received.length;
    const run = await runToEnd(w, w.bob, conversation.id, { model: 'gpt-4o-mini', max_credits: 50 });
    expect(run.status).to.equal('succeeded');
    expect(received[before].messages).to.deep.equal([
      {
        role: 'system',
        content: `${knowledgeOf('Origin', 'Origin facts', 'Origin facts.')}\n\n${knowledgeOf('Filed into', 'Filed facts', 'Filed facts.')}`,
      },
      { role: 'user', content: 'Facts?' },
    ]);
    expect(run.context.knowledge).to.deep.equal([
      { project_id: origin.project.id, skill_id: origin.skill.id, status: 'injected' },
      { project_id: filed.id, skill_id: filedSkill.id, status: 'injected' },
    ]);
  });

  it('a conversation’s own skill is system context before its projects’ knowledge; PATCH refuses a skill the caller cannot read (400 naming skill_id)', async () => {
    const { project, skill: projectSkill } = await projectWithKnowledge(w, w.bob, 'Launch is in April.', 'Launch', 'Launch facts');
    const own = await createSkill(w.server, w.bob, w.org, { name: 'Reply style', body: 'Answer in two sentences.' });
    const secret = await createSkill(w.server, w.carol, w.org, { name: 'Carol only', body: 'SECRET instructions.' });
    const conversation = await createConversation(w.server, w.bob, w.org, { project_id: project.id });
    const refused = await w.server.request('patch', `/conversations/${conversation.id}`, { token: w.bob.token, body: { skill_id: secret.id } });
    expect(refused.status).to.equal(400);
    expect(refused.body.data.issues[0].path).to.deep.equal(['skill_id']);
    const set = await w.server.request('patch', `/conversations/${conversation.id}`, { token: w.bob.token, body: { skill_id: own.id } });
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    expect(set.body.skill_id).to.equal(own.id);
    expect((await w.server.request('post', `/conversations/${conversation.id}/messages`, { token: w.bob.token, body: { content: 'When?' } })).status).to.equal(
      201,
    );
    const before = received.length;
    const run = await runToEnd(w, w.bob, conversation.id, { model: 'gpt-4o-mini', max_credits: 50 });
    expect(run.status).to.equal('succeeded');
    expect(received[before].messages).to.deep.equal([
      {
        role: 'system',
        content: `Instructions for this conversation (skill "Reply style"):\n\nAnswer in two sentences.\n\n${knowledgeOf('Launch', 'Launch facts', 'Launch is in April.')}`,
      },
      { role: 'user', content: 'When?' },
    ]);
    expect(run.context.knowledge).to.deep.equal([
      { project_id: null, skill_id: own.id, status: 'injected' },
      { project_id: project.id, skill_id: projectSkill.id, status: 'injected' },
    ]);
    // A conversation skill the turn's user cannot read (set while they could, say) is not sent, and the run says so.
    await w.db('conversations').where({ id: conversation.id }).update({ skill_id: secret.id });
    expect((await w.server.request('post', `/conversations/${conversation.id}/messages`, { token: w.bob.token, body: { content: 'And?' } })).status).to.equal(
      201,
    );
    const next = await runToEnd(w, w.bob, conversation.id, { model: 'gpt-4o-mini', max_credits: 50 });
    expect(JSON.stringify(received[before + 1])).not.to.include('SECRET');
    expect(next.context.knowledge[0]).to.deep.equal({ project_id: null, skill_id: secret.id, status: 'unreadable' });
    const cleared = await w.server.request('patch', `/conversations/${conversation.id}`, { token: w.bob.token, body: { skill_id: null } });
    expect(cleared.status).to.equal(200);
    expect(cleared.body.skill_id).to.equal(null);
  });

  it('a knowledge skill the turn’s user cannot read is not sent, and the run says so; PATCH refuses it with 400 naming the field', async () => {
    const secret = await createSkill(w.server, w.carol, w.org, { name: 'Carol private notes', body: 'SECRET: the launch moves to May.' });
    const project = await createProject(w.server, w.bob, w.org, { title: 'Bob project' });
    const refused = await w.server.request('patch', `/projects/${project.id}`, { token: w.bob.token, body: { knowledge_skill_id: secret.id } });
    expect(refused.status).to.equal(400);
    expect(refused.body.message).to.equal('knowledge_skill_id: is not a live skill of this organization that you can read');
    // As if it had been set while Bob could read it (the skill was shared with him, then made private again).
    await w.db('projects').where({ id: project.id }).update({ knowledge_skill_id: secret.id });
    const conversation = await createConversation(w.server, w.bob, w.org, { project_id: project.id });
    expect(
      (await w.server.request('post', `/conversations/${conversation.id}/messages`, { token: w.bob.token, body: { content: 'When is the launch?' } })).status,
    ).to.equal(201);
    const before = received.length;
    const run = await runToEnd(w, w.bob, conversation.id, { model: 'gpt-4o-mini' });
    expect(run.status).to.equal('succeeded');
    expect(received[before].messages).to.deep.equal([{ role: 'user', content: 'When is the launch?' }]);
    expect(JSON.stringify(received[before])).not.to.include('SECRET');
    expect(run.context.knowledge).to.deep.equal([{ project_id: project.id, skill_id: secret.id, status: 'unreadable' }]);
    expect(run.context.messages).to.equal(1);
    const cleared = await w.server.request('patch', `/projects/${project.id}`, { token: w.bob.token, body: { knowledge_skill_id: null } });
    expect(cleared.status).to.equal(200);
    expect(cleared.body.knowledge_skill_id).to.equal(null);
  });

  it('a conversation longer than the model’s window completes: the request fits the window with the answer’s room, newest kept, oldest dropped', async () => {
    // A small catalog model, enabled in the organization with an answer length of 200 tokens.
    await w.db('chat_models').insert({
      id: 'tiny-chat',
      provider: 'openai-compatible',
      name: 'Tiny',
      context_window: 1500,
      input_credits_per_1k_tokens: 1,
      output_credits_per_1k_tokens: 1,
    });
    const copy = await w.server.request('put', '/chat-models/tiny-chat/copy', {
      token: w.owner.token,
      body: { organization_id: w.org, enabled: true, default_parameters: { max_tokens: 200 } },
    });
    expect(copy.status).to.equal(200);
    const history = Array.from({ length: 40 }, (_, n) => turn(n, 20));
    history.push({ role: 'user', content: 'And the newest question: what did we decide?' });
    expect(promptOf(history)).to.be.greaterThan(3000);
    const conversation = await conversationWith(w, w.bob, history);
    const before = received.length;
    const run = await runToEnd(w, w.bob, conversation.id, { model: 'tiny-chat', max_credits: 20 });
    expect(run.status).to.equal('succeeded');
    const sent = received[before];
    expect(sent.model).to.equal('tiny-chat');
    expect(sent.max_tokens).to.equal(200);
    // Fits: the prompt, counted with the same tokenizer, and the answer's 200 tokens are within the window.
    expect(promptOf(sent.messages) + sent.max_tokens).to.be.at.most(1500);
    const kept = sent.messages.length - 1;
    const dropped = history.length - kept;
    expect(dropped).to.be.greaterThan(10);
    expect(sent.messages[0]).to.deep.equal({ role: 'system', content: droppedNote(dropped) });
    expect(sent.messages.slice(1)).to.deep.equal(history.slice(dropped));
    expect(sent.messages.at(-1)).to.deep.equal({ role: 'user', content: 'And the newest question: what did we decide?' });
    expect(run.context).to.deep.equal({
      window: 1500,
      tokens: promptOf(sent.messages),
      answer_tokens: 200,
      messages: kept,
      dropped_messages: dropped,
      truncated_messages: 0,
      system_truncated: false,
      tools_tokens: toolsTokensOf(received[before]),
      knowledge: [],
    });
    const answer = await w.db('conversation_messages').where({ id: run.answer_message_id }).first();
    expect(answer).to.include({ role: 'assistant', content: 'Noted.' });
  });

  it('a window too small for the answered message fails the run for good, naming why; nothing is sent or charged', async () => {
    await w.db('chat_models').insert({
      id: 'speck-chat',
      provider: 'openai-compatible',
      name: 'Speck',
      context_window: 40,
      input_credits_per_1k_tokens: 1,
      output_credits_per_1k_tokens: 1,
    });
    const copy = await w.server.request('put', '/chat-models/speck-chat/copy', { token: w.owner.token, body: { organization_id: w.org, enabled: true } });
    expect(copy.status).to.equal(200);
    const conversation = await conversationWith(w, w.bob, [turn(0, 5), turn(1, 5)]);
    const before = received.length;
    const run = await runToEnd(w, w.bob, conversation.id, { model: 'speck-chat', max_credits: 5 });
    expect(run).to.deep.include({ status: 'failed', credits_charged: 0, context: null, answer_message_id: null });
    expect(run.error.code).to.equal('context_window_too_small');
    expect(run.error.message).to.match(/^the model's context window \(40 tokens\) cannot hold the message it is asked to answer/);
    expect(received.length).to.equal(before);
    expect(await reconcileCredits(w.db, w.org)).to.deep.equal([]);
  });

  it('tool results in the history are cut to their budget before they are sent', async () => {
    const result = `RESULT ${words(5, 6000)} TAIL`;
    const history: PromptMessage[] = [
      { role: 'user', content: 'Look up the spring numbers.' },
      { role: 'assistant', content: 'Looking them up.' },
      { role: 'tool', content: result },
      { role: 'user', content: 'Summarize them.' },
    ];
    expect(countTokens(result)).to.be.greaterThan(20000);
    const conversation = await conversationWith(w, w.bob, history);
    const before = received.length;
    const run = await runToEnd(w, w.bob, conversation.id, { model: 'gpt-4o-mini', max_credits: 50 });
    expect(run.status).to.equal('succeeded');
    const sent = received[before].messages as PromptMessage[];
    expect(sent).to.have.length(4);
    expect([sent[0], sent[1], sent[3]]).to.deep.equal([history[0], history[1], history[3]]);
    const tool = sent[2]!;
    expect(tool.role).to.equal('tool');
    expect(tool.content!.startsWith('RESULT word5x0 word5x1')).to.equal(true);
    expect(tool.content).not.to.include('TAIL');
    expect(tool.content).to.match(/\[… cut to fit the context window: \d+ of \d+ tokens kept …\]\n$/);
    expect(tokensOf(tool)).to.be.within(3900, 4000);
    expect(run.context).to.include({ messages: 4, dropped_messages: 0, truncated_messages: 1, tokens: promptOf(sent) });
  });
});

describe('chat turn context on the sandbox model', function () {
  this.timeout(60_000);
  const w = world();

  it('knowledge and a history longer than sandbox-chat’s 8192 tokens: the sandbox answers the fitted prompt, the run records it', async () => {
    const { project, skill } = await projectWithKnowledge(w, w.bob, 'House style: short sentences.');
    const history = Array.from({ length: 60 }, (_, n) => turn(n, 60));
    history.push({ role: 'user', content: 'What is the house style?' });
    expect(promptOf(history)).to.be.greaterThan(12000);
    const conversation = await conversationWith(w, w.bob, history, { project_id: project.id });
    const run = await runToEnd(w, w.bob, conversation.id, { model: 'sandbox-chat', max_credits: 50 });
    expect(run.status).to.equal('succeeded');
    const system = knowledgeOf('Spring launch', 'Brand book', 'House style: short sentences.');
    // The tools the turn offered took their room first (at most a quarter of the window).
    const toolsTokens = run.context.tools_tokens as number;
    expect(toolsTokens).to.be.greaterThan(0).and.at.most(2048);
    const fitted = fitPrompt({ system, history, window: 8192, reservedTokens: toolsTokens });
    const dropped = fitted.record.dropped_messages;
    expect(dropped).to.be.greaterThan(10);
    expect(fitted.messages.slice(0, 2)).to.deep.equal([
      { role: 'system', content: system },
      { role: 'system', content: droppedNote(dropped) },
    ]);
    expect(fitted.messages.slice(2)).to.deep.equal(history.slice(dropped));
    // The sandbox's answer is a digest of the exact messages it was sent: these, not the whole branch.
    expect(run.snapshot).to.equal(sandboxAnswer({ model: 'sandbox-chat', messages: fitted.messages as never }));
    expect(run.snapshot).not.to.equal(sandboxAnswer({ model: 'sandbox-chat', messages: history as never }));
    expect(promptOf(fitted.messages) + 1024 + toolsTokens).to.be.at.most(8192);
    expect(run.context).to.deep.equal({
      window: 8192,
      tokens: promptOf(fitted.messages),
      answer_tokens: 1024,
      messages: history.length - dropped,
      dropped_messages: dropped,
      truncated_messages: 0,
      system_truncated: false,
      tools_tokens: toolsTokens,
      knowledge: [{ project_id: project.id, skill_id: skill.id, status: 'injected' }],
    });
    expect(await reconcileCredits(w.db, w.org)).to.deep.equal([]);
  });
});
