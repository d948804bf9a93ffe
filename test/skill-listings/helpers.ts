import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createOrganization, createSkill, type TestUser } from '../support/factories.ts';
import type { ApiResponse, TestServer } from '../support/server.ts';

export const show = (res: ApiResponse) => `${res.status} ${JSON.stringify(res.body)}`;

export { newOperator } from '../support/factories.ts';

/** The error body naming `field` (in the message and as an issue path). */
export function expectError(res: ApiResponse, status: number, code: string, field?: string): void {
  expect(res.status, show(res)).to.equal(status);
  expect(res.body.code, show(res)).to.equal(code);
  if (field !== undefined) {
    expect(res.body.message, show(res)).to.match(new RegExp(`^${field}:`));
    expect(
      res.body.data.issues.map((i: { path: string[] }) => i.path[0]),
      show(res),
    ).to.include(field);
  }
}

export const catalogReady = { summary: 'Writes short posts', categories: ['social'] };

/** An author with an organization and a skill, and a draft listing of it (extra fields in `fields`). */
export async function draftListing(server: TestServer, author: TestUser, fields: Record<string, unknown> = {}, skillFields: Record<string, unknown> = {}) {
  const organization = await createOrganization(server, author);
  const skill = await createSkill(server, author, organization, { description: 'A skill', body: 'Do the thing.', ...skillFields });
  const res = await server.request('post', '/skill-listings', { token: author.token, body: { skill_id: skill.id, ...fields } });
  expect(res.status, show(res)).to.equal(201);
  return { organization, skill, listing: res.body.listing };
}

/** A published listing with a unique title (so catalog searches can find exactly it). */
export async function publishedListing(server: TestServer, author: TestUser, fields: Record<string, unknown> = {}) {
  const made = await draftListing(server, author, { title: `Listing ${randomUUID().slice(0, 8)}`, ...catalogReady, ...fields });
  const res = await server.request('post', `/skill-listings/${made.listing.id}/status`, { token: author.token, body: { status: 'published' } });
  expect(res.status, show(res)).to.equal(200);
  return { ...made, listing: res.body.listing };
}
