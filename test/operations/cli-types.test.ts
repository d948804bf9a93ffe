import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { OPS_TYPES_FILE, opsClientTypes, opsDocument } from '../../scripts/ops-client-types.ts';
import { openApiDocument } from '../../src/app/routes.ts';

/**
 * The operator CLI calls the API through openapi-fetch typed by src/operations/cli/openapi-types.ts,
 * openapi-typescript's output for the live document's /ops/* operations. Committed, so the CLI
 * typechecks without a server; this test fails while the file is stale (run `npm run ops:types`).
 */
describe('operator CLI: its API types are the live OpenAPI document’s', function () {
  this.timeout(60_000);

  it('the committed types equal what openapi-typescript generates from the document now', async () => {
    const committed = await readFile(OPS_TYPES_FILE, 'utf8');
    const generated = await opsClientTypes();
    expect(committed === generated, 'src/operations/cli/openapi-types.ts is stale: run `npm run ops:types` and commit it').to.equal(true);
  });

  it('they cover every /ops/* operation, with the components those reach and no others', () => {
    const document = openApiDocument('0.0.0') as unknown as { paths: Record<string, unknown> };
    const ops = opsDocument(document as never) as { paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } };
    const expected = Object.keys(document.paths).filter((path) => path.startsWith('/ops/'));
    expect(Object.keys(ops.paths)).to.deep.equal(expected);
    expect(expected).to.include.members(['/ops/jobs', '/ops/jobs/{job_id}/retry-now', '/ops/bulk-actions', '/ops/pauses', '/ops/audit-log', '/ops/me']);
    expect(ops.components.schemas).to.have.property('Job');
    // Not an operator operation's: left out.
    expect(JSON.stringify(ops)).not.to.include('"/organizations/{organization_id}"');
  });
});
