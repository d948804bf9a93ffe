import { expect } from 'chai';
import { createOrganization, newUser } from '../support/factories.ts';
import { ContractValidator, pointer } from '../support/openapi-contract.ts';
import { useServer } from '../support/suite.ts';

type Json = Record<string, any>;

/**
 * Issue 37, item 1: rules the server enforces on input are declared in the document, each checked
 * here both ways — what the document refuses, ajv (JSON Schema 2020-12) refuses, and the server
 * answers a value the document allows. The property-based sweep (openapi-fuzz.test.ts) covers
 * every operation; these are the defects the issue listed, one by one.
 */
describe('the OpenAPI document declares the rules the server enforces (issue 37)', () => {
  const ctx = useServer();
  let document: Json;
  let validator: ContractValidator;
  const component = (name: string) => `/${pointer('components', 'schemas', name)}`;
  const bodyOf = (path: string, method: string) => `/${pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema')}`;
  const parameterOf = (path: string, method: string, name: string) => {
    const index = (document.paths[path][method].parameters as Json[]).findIndex((p) => p.name === name);
    expect(index, `${method} ${path} ${name}`).to.be.at.least(0);
    return `/${pointer('paths', path, method, 'parameters', String(index), 'schema')}`;
  };
  const valid = (at: string, value: unknown, coerce = false) => validator.problems(at, value, { coerce }).length === 0;

  before(async () => {
    document = (await ctx.server.request('get', '/openapi.json')).body;
    validator = new ContractValidator(document);
  });

  it('one e-mail rule: 0@com is invalid by the document and refused by the server, a plain address is valid and taken', async () => {
    const owner = newUser();
    const organization = await createOrganization(ctx.server, owner);
    const invitation = component('CreateInvitation');
    expect(valid(invitation, { email: '0@com', role: 'member' })).to.equal(false);
    expect(valid(invitation, { email: 'ada.lovelace@example.test', role: 'member' })).to.equal(true);
    const refused = await ctx.server.request('post', `/organizations/${organization}/invitations`, {
      token: owner.token,
      body: { email: '0@com', role: 'member' },
    });
    expect(refused.status).to.equal(400);
    expect(refused.body.data.issues[0].path).to.deep.equal(['email']);
    const taken = await ctx.server.request('post', `/organizations/${organization}/invitations`, {
      token: owner.token,
      body: { email: 'ada.lovelace@example.test', role: 'member' },
    });
    expect(taken.status).to.equal(201);
    // The billing contact and the alert recipients share the rule.
    expect(JSON.stringify(document).match(/"format":"email"/g)!.length).to.be.at.least(3);
  });

  it('PATCH bodies that refuse {} declare minProperties: 1; exactly-one-of rules are oneOf', () => {
    const unbounded: string[] = [];
    for (const [path, item] of Object.entries<Json>(document.paths)) {
      if (!item.patch?.requestBody?.content?.['application/json']) continue;
      const at = bodyOf(path, 'patch');
      if (valid(at, {})) unbounded.push(`${path}`);
    }
    // Every PATCH body that refuses `{}` says so; these two have no rule against it in their schema.
    expect(unbounded.sort()).to.deep.equal([
      '/organizations/{organization_id}/billing/customer',
      '/organizations/{organization_id}/webhook-endpoints/{endpoint_id}',
    ]);
    const invitation = component('UpdateInvitation');
    expect(valid(invitation, { role: 'member', status: 'accepted' })).to.equal(false);
    expect(valid(invitation, { role: 'member' })).to.equal(true);
    const post = bodyOf('/social/net1_post', 'post');
    const terms = { organization_id: 'org' };
    expect(valid(post, { ...terms, input: { post_id: 'p1', url: 'https://example.test/p/1' } })).to.equal(false);
    expect(valid(post, { ...terms, input: {} })).to.equal(false);
    expect(valid(post, { ...terms, input: { post_id: 'p1' } })).to.equal(true);
    // A message names its conversation.
    expect(valid(post, { ...terms, message_id: '0a25e0e4-254a-4326-bac6-22771b361b52', input: { post_id: 'p1' } })).to.equal(false);
  });

  it('single-line texts, base64, comma-separated lists, dates, time zones and event types are declared as the server checks them', () => {
    const organization = component('UpdateOrganization');
    expect(valid(organization, { name: 'Two\nlines' })).to.equal(false);
    expect(valid(organization, { name: '   ' })).to.equal(false);
    expect(valid(organization, { name: 'Acme Studio' })).to.equal(true);
    const logo = bodyOf('/organizations/{organization_id}/logo', 'put');
    expect(valid(logo, { content_type: 'image/png', data: 'not base64!' })).to.equal(false);
    const types = parameterOf('/library', 'get', 'types');
    expect(valid(types, 'asset,skill', true)).to.equal(true);
    expect(valid(types, ')c.2M26', true)).to.equal(false);
    const projects = parameterOf('/conversations', 'get', 'project_ids');
    expect(valid(projects, '93a415b5-0ed1-4490-940b-6bd082dcaf93, 75117cc8-b2c5-4a09-b95a-19c61c9e5a4d', true)).to.equal(true);
    expect(valid(projects, 'e', true)).to.equal(false);
    const events = parameterOf('/organizations/{organization_id}/events', 'get', 'type');
    expect(valid(events, 'generation.succeeded,generation.failed', true)).to.equal(true);
    expect(valid(events, 'generationXsucceeded', true)).to.equal(false);
    const report = bodyOf('/reports/query', 'post');
    const range = { organization_id: 'org', group_by: 'day' };
    expect(validator.problems(report, { ...range, from: 'J', to: '2026-01-31' }).some((p) => p.instancePath === '/from')).to.equal(true);
    expect(validator.problems(report, { ...range, from: '2026-01-01', to: '2026-01-31T12:00:00Z' }).some((p) => /\/(from|to)/.test(p.instancePath))).to.equal(
      false,
    );
    const personalization = bodyOf('/organizations/{organization_id}/members/{user_id}/personalization', 'patch');
    expect(valid(personalization, { timezone: 'Europe/Paris' })).to.equal(true);
    expect(valid(personalization, { timezone: 'caller' })).to.equal(false);
  });

  it('state-dependent fields are marked x-checked-by-server, and the cursor is opaque', () => {
    const cursor = (document.paths['/projects'].get.parameters as Json[]).find((p) => p.name === 'cursor')!;
    expect(cursor.schema['x-checked-by-server']).to.equal(true);
    expect(cursor.schema.description).to.match(/^Opaque/);
    const canvas = validator.schemasAt({ $ref: '#/components/schemas/CreateCanvas' }, ['project_id']);
    expect(canvas.some((schema) => schema['x-checked-by-server'] === true)).to.equal(true);
    const role = validator.schemasAt({ $ref: '#/components/schemas/ChangeMemberRole' }, ['role']);
    expect(role.some((schema) => schema['x-checked-by-server'] === true)).to.equal(true);
  });

  it('public operations declare Service-Api-Version too (the server refuses 2 on them)', async () => {
    const version = parameterOf('/healthz', 'get', 'Service-Api-Version');
    expect(valid(version, '2', true)).to.equal(false);
    const refused = await ctx.server.request('get', '/healthz', { headers: { 'service-api-version': '2' } });
    expect(refused.status).to.equal(400);
  });

  it('a __proto__ key is 400 naming it, not a generic message with empty issues', async () => {
    const owner = newUser();
    const organization = await createOrganization(ctx.server, owner);
    const res = await ctx.server.request('patch', `/organizations/${organization}`, {
      token: owner.token,
      headers: { 'content-type': 'application/json' },
      rawBody: '{"name":"x","__proto__":{"admin":true}}',
    });
    expect(res.status).to.equal(400);
    expect(res.body.data.issues).to.deep.equal([
      { path: ['__proto__'], message: 'a key named __proto__, or constructor with a prototype key, is not allowed anywhere in the body' },
    ]);
  });
});
