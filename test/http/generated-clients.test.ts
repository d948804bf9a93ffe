import { createClient as heyApi } from '@hey-api/openapi-ts';
import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { generate as orval } from 'orval';
import ts from 'typescript';
import { useServer } from '../support/suite.ts';

const require = createRequire(import.meta.url);
/** openapi-fetch's package, for a program in a temporary directory outside the repository. */
const openapiFetch = path.dirname(require.resolve('openapi-fetch/package.json'));

/** Type-checks the programs (and what they import) together, strictly, as a client project would; the diagnostics as text. */
function typeCheck(files: string[]): string[] {
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    skipLibCheck: true,
    types: [],
    paths: { 'openapi-fetch': [openapiFetch] },
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file ? `${path.relative(path.dirname(files[0]!), d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : '';
    return `TS${d.code} ${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

/**
 * The five calls a newcomer makes first, against each generated client: create an organization,
 * create an asset (leaving out fields that have defaults), list assets with a cursor and a boolean
 * filter, run a social read, read the credits; and a message whose `role` has a default.
 */
const programs = {
  'openapi-typescript': `
import createClient from 'openapi-fetch';
import type { paths } from './api.ts';

export async function firstHour(token: string): Promise<number> {
  const api = createClient<paths>({ baseUrl: 'http://localhost:3000', headers: { authorization: \`Bearer \${token}\` } });
  const org = await api.POST('/organizations', { body: { name: 'Acme' } });
  if (!org.data) throw new Error(org.error?.message);
  const organization_id: string = org.data.organization.id;
  const asset = await api.POST('/assets', { body: { organization_id, type: 'text', title: 'Notes', content: 'Hello' } });
  const page = await api.GET('/assets', { params: { query: { organization_id, limit: 10, deleted: false } } });
  const next = page.data?.next_cursor;
  if (next) await api.GET('/assets', { params: { query: { organization_id, cursor: next } } });
  const read = await api.POST('/social/net2_profile', { body: { organization_id, input: { username: 'ada' } } });
  const summary: string | undefined = read.data?.result.summary;
  const conversation = await api.POST('/conversations', { body: { organization_id } });
  if (conversation.data) await api.POST('/conversations/{conversation_id}/messages', { params: { path: { conversation_id: conversation.data.id } }, body: { content: 'Hi' } });
  const credits = await api.GET('/organizations/{organization_id}/credits', { params: { path: { organization_id } } });
  return (credits.data?.balance ?? 0) + (asset.data?.id.length ?? 0) + (summary?.length ?? 0);
}
`,
  '@hey-api/openapi-ts': `
import { createAsset, createConversation, createOrganization, getCredits, listAssets, postConversationMessage, runSocialNet2Profile } from './index.ts';
import { client } from './client.gen.ts';

export async function firstHour(token: string): Promise<number> {
  client.setConfig({ baseUrl: 'http://localhost:3000', auth: () => token });
  const org = await createOrganization({ body: { name: 'Acme' } });
  if (!org.data) throw new Error('no organization');
  const organization_id: string = org.data.organization.id;
  const asset = await createAsset({ body: { organization_id, type: 'text', title: 'Notes', content: 'Hello' } });
  const page = await listAssets({ query: { organization_id, limit: 10, deleted: false } });
  const next = page.data?.next_cursor;
  if (next) await listAssets({ query: { organization_id, cursor: next } });
  const read = await runSocialNet2Profile({ body: { organization_id, input: { username: 'ada' } } });
  const summary: string | undefined = read.data?.result.summary;
  const conversation = await createConversation({ body: { organization_id } });
  if (conversation.data) await postConversationMessage({ path: { conversation_id: conversation.data.id }, body: { content: 'Hi' } });
  const credits = await getCredits({ path: { organization_id } });
  return (credits.data?.balance ?? 0) + (asset.data?.id.length ?? 0) + (summary?.length ?? 0);
}
`,
  orval: `
import { createAsset, createConversation, createOrganization, getCredits, listAssets, postConversationMessage, runSocialNet2Profile } from './api.ts';

export async function firstHour(token: string): Promise<number> {
  const init = { headers: { authorization: \`Bearer \${token}\` } };
  const org = await createOrganization({ name: 'Acme' }, init);
  if (org.status !== 201) throw new Error('no organization');
  const organization_id: string = org.data.organization.id;
  const asset = await createAsset({ organization_id, type: 'text', title: 'Notes', content: 'Hello' }, init);
  const page = await listAssets({ organization_id, limit: 10, deleted: false }, init);
  const next = page.status === 200 ? page.data.next_cursor : null;
  if (next) await listAssets({ organization_id, cursor: next }, init);
  const read = await runSocialNet2Profile({ organization_id, input: { username: 'ada' } }, init);
  const summary: string | undefined = read.status === 200 ? read.data.result.summary : undefined;
  const conversation = await createConversation({ organization_id }, init);
  if (conversation.status === 201) await postConversationMessage(conversation.data.id, { content: 'Hi' }, init);
  const credits = await getCredits(organization_id, init);
  return (credits.status === 200 ? credits.data.balance : 0) + (asset.status === 201 ? asset.data.id.length : 0) + (summary?.length ?? 0);
}
`,
} as const;

/**
 * Clients generated from the live /openapi.json by the three common generators, with their default
 * options, compile against a program that calls the API as a newcomer would: the document is
 * generator-clean (no regex flags in patterns, booleans as booleans, defaulted request fields optional).
 */
describe('generated clients (openapi-typescript + openapi-fetch, @hey-api/openapi-ts, orval)', function () {
  this.timeout(300_000);
  const ctx = useServer();
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'generated-clients-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('each generates from the served document and a program calling six operations compiles against it', async () => {
    const res = await ctx.server.request('get', '/openapi.json');
    expect(res.status).to.equal(200);
    const document = path.join(dir, 'openapi.json');
    await writeFile(document, JSON.stringify(res.body));

    const folders = { 'openapi-typescript': path.join(dir, 'ota'), '@hey-api/openapi-ts': path.join(dir, 'hey-api'), orval: path.join(dir, 'orval') };
    await mkdir(folders['openapi-typescript']);
    await writeFile(path.join(folders['openapi-typescript'], 'api.ts'), astToString(await openapiTS(res.body)));
    await heyApi({ input: document, output: folders['@hey-api/openapi-ts'], logs: { level: 'silent' } });
    await orval({ input: { target: document }, output: { target: path.join(folders.orval, 'api.ts'), client: 'fetch', mode: 'single', prettier: false } });

    const files: string[] = [];
    for (const [generator, folder] of Object.entries(folders)) {
      const file = path.join(folder, 'first-hour.ts');
      await writeFile(file, programs[generator as keyof typeof programs]);
      files.push(file);
    }
    expect(typeCheck(files)).to.deep.equal([]);
  });
});
