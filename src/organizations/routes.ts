import { presentPage } from '../core/pagination.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { organizationRoute } from '../http/organization-route.ts';
import { normaliseSlug, availableSlug } from './slug.ts';
import { presentOrganization } from './presenter.ts';
import {
  availableSlugQuery,
  availableSlugSchema,
  createOrganizationBody,
  listOrganizationsQuery,
  organizationEnvelope,
  organizationPage,
  updateOrganizationBody,
} from './schema.ts';
import { createOrganization, deleteOrganization, getOrganization, listOrganizationsOfCaller, markOnboarded, updateOrganization } from './service.ts';
import { signedIn } from '../http/authorize.ts';

const tag = 'Organizations';

export const organizationRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/organizations/available-slug',
    operationId: 'getAvailableOrganizationSlug',
    summary: 'Check whether an organization slug is free, with a free suggestion',
    tag,
    query: availableSlugQuery,
    response: { status: 200, description: 'Availability of the slug', schema: availableSlugSchema },
    authorize: signedIn('a slug suggestion reveals nothing about other organizations'),
    handler: async ({ query, deps }) => {
      const slug = normaliseSlug(query.slug);
      const suggestion = await availableSlug(deps.db, slug);
      return { slug, available: suggestion === slug, suggestion };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/organizations',
    operationId: 'createOrganization',
    idempotent: {},
    summary: 'Create an organization; the caller becomes its owner',
    tag,
    body: createOrganizationBody,
    response: { status: 201, description: 'The new organization', schema: organizationEnvelope },
    errors: [409],
    authorize: signedIn('anyone may start an organization and becomes its owner'),
    handler: async ({ body, actor, deps }) => ({ organization: presentOrganization(await createOrganization(deps, actor, body), 'owner') }),
  }),
  defineRoute({
    method: 'get',
    path: '/organizations',
    operationId: 'listOrganizations',
    summary: 'The organizations the caller belongs to, with their role in each',
    description:
      'By name, then id; keyset paged (an organization created meanwhile never shifts a page). `GET /me` shows them with the caller’s permissions and, where they may see it, the balance.',
    tag,
    query: listOrganizationsQuery,
    response: { status: 200, description: 'A page of organizations', schema: organizationPage },
    authorize: signedIn('a caller lists only the organizations they are a member of'),
    handler: async ({ query, actor, deps }) => presentPage(await listOrganizationsOfCaller(deps, actor, query), (row) => presentOrganization(row, row.role)),
  }),
  organizationRoute({
    method: 'get',
    path: '/organizations/{organization_id}',
    operationId: 'getOrganization',
    summary: 'Get an organization the caller belongs to',
    tag,
    response: { status: 200, description: 'The organization', schema: organizationEnvelope },
    handler: async ({ params, actor }) => {
      const { organization, role } = await getOrganization(actor, params.organization_id);
      return { organization: presentOrganization(organization, role) };
    },
  }),
  organizationRoute({
    method: 'patch',
    path: '/organizations/{organization_id}',
    operationId: 'updateOrganization',
    summary: 'Rename an organization or change its slug',
    tag,
    body: updateOrganizationBody,
    response: { status: 200, description: 'The updated organization', schema: organizationEnvelope },
    errors: [409],
    permission: 'organization.update',
    handler: async ({ params, body, actor, deps }) => {
      const { organization, role } = await updateOrganization(deps, actor, params.organization_id, body);
      return { organization: presentOrganization(organization, role) };
    },
  }),
  organizationRoute({
    method: 'delete',
    path: '/organizations/{organization_id}',
    operationId: 'deleteOrganization',
    summary: 'Delete an organization (owners only; soft delete)',
    tag,
    response: { status: 204, description: 'Deleted' },
    permission: 'organization.delete',
    handler: async ({ params, actor, deps }) => deleteOrganization(deps, actor, params.organization_id),
  }),
  organizationRoute({
    method: 'post',
    path: '/organizations/{organization_id}/onboarded',
    operationId: 'markOrganizationOnboarded',
    summary: 'Record that the organization finished onboarding',
    tag,
    response: { status: 200, description: 'The organization with `onboarded_at` set', schema: organizationEnvelope },
    permission: 'organization.update',
    handler: async ({ params, actor, deps }) => {
      const { organization, role } = await markOnboarded(deps, actor, params.organization_id);
      return { organization: presentOrganization(organization, role) };
    },
  }),
];
