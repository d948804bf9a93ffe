import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { openApiDocument } from '../../src/app/routes.ts';
import { packageVersion } from '../../src/web.ts';
import { useServer } from '../support/suite.ts';

/** Type-checks `files` (name → source) together, strictly; returns the diagnostics as text. */
function typeCheck(dir: string, names: string[]): string[] {
  const program = ts.createProgram(
    names.map((name) => path.join(dir, name)),
    {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      types: [],
    },
  );
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => `TS${d.code} ${d.file ? path.basename(d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

describe('GET /openapi.json as a client contract', () => {
  const ctx = useServer();
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'openapi-client-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is the document the lint script writes (same routes, webhooks included)', async () => {
    const res = await ctx.server.request('get', '/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal(JSON.parse(JSON.stringify(openApiDocument(packageVersion))));
    expect(res.body.paths).to.have.property('/billing/webhooks/stripe');
  });

  it('describes free-form JSON as a non-recursive JsonValue component', async () => {
    const res = await ctx.server.request('get', '/openapi.json');
    const jsonValue = res.body.components.schemas.JsonValue;
    expect(jsonValue).to.be.an('object');
    expect(JSON.stringify(jsonValue)).not.to.contain('#/components/schemas/JsonValue');
    expect(res.body.components.schemas.Error.properties.code.enum).to.include.members(['method_not_allowed', 'validation_failed', 'internal']);
  });

  it('generates a TypeScript client with openapi-typescript that compiles under strict tsc', async function () {
    this.timeout(120_000);
    const res = await ctx.server.request('get', '/openapi.json');
    const source = astToString(await openapiTS(res.body));
    await writeFile(path.join(dir, 'api.ts'), source);
    // A client uses the generated types: a JSON-valued field must accept any JSON value.
    await writeFile(
      path.join(dir, 'use.ts'),
      [
        "import type { components, paths } from './api.ts';",
        "type Asset = components['schemas']['Asset'];",
        "const metadata: Asset['metadata'] = { nested: [1, 'two', null, { deep: true }] };",
        "type CreateOrganization = paths['/organizations']['post']['requestBody']['content']['application/json'];",
        "const body: CreateOrganization = { name: 'Acme' };",
        "type ErrorBody = components['schemas']['Error'];",
        "const error: ErrorBody = { code: 'not_found', message: 'x', data: { issues: [] } };",
        'export { metadata, body, error };',
        '',
      ].join('\n'),
    );
    expect(typeCheck(dir, ['api.ts', 'use.ts'])).to.deep.equal([]);
  });
});
