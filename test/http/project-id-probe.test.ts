import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createOrganization } from '../support/organizations.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

/**
 * A create naming a `project_id` answers a project that does not exist exactly like one of
 * another organization (the same 400): project ids cannot be probed, and no row is written.
 */
describe('project_id in create bodies cannot be probed', () => {
  const ctx = useServer();

  const expected = (projectId: string) => {
    const message = `project_id: no project ${projectId} that you can read`;
    return { code: 'validation_failed', message, data: { issues: [{ path: ['project_id'], message }] } };
  };

  const creates: [string, string, (org: string, projectId: string) => Record<string, unknown>][] = [
    ['assets', '/assets', (org, project_id) => ({ organization_id: org, type: 'text', content: 'x', project_id })],
    ['canvases', '/canvases', (org, project_id) => ({ organization_id: org, title: 'C', project_id })],
    ['conversations', '/conversations', (org, project_id) => ({ organization_id: org, title: 'T', project_id })],
    ['skills', '/skills', (org, project_id) => ({ organization_id: org, name: `S ${randomUUID().slice(0, 6)}`, description: 'd', body: 'b', project_id })],
  ];

  for (const [table, path, body] of creates) {
    it(`POST ${path}: a missing project and another tenant's project get the same 400`, async () => {
      const owner = newUser();
      const stranger = newUser();
      const org = await createOrganization(ctx.server, owner);
      const otherOrg = await createOrganization(ctx.server, stranger);
      const project = await ctx.server.request('post', '/projects', { token: stranger.token, body: { organization_id: otherOrg, title: 'Theirs' } });
      expect(project.status, JSON.stringify(project.body)).to.equal(201);
      const theirs: string = project.body.id;

      const missingId = randomUUID();
      const missing = await ctx.server.request('post', path, { token: owner.token, body: body(org, missingId) });
      expect(missing.status, JSON.stringify(missing.body)).to.equal(400);
      expect(missing.body).to.deep.equal(expected(missingId));

      const foreign = await ctx.server.request('post', path, { token: owner.token, body: body(org, theirs) });
      expect(foreign.status, JSON.stringify(foreign.body)).to.equal(400);
      expect(foreign.body).to.deep.equal(expected(theirs));

      expect(await ctx.db(table).where({ organization_id: org }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
    });
  }
});
