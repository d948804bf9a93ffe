import { member } from '../../http/authorize.ts';
import { defineRoute, type AnyRoute, LARGE_BODY_LIMIT } from '../../http/route.ts';
import { presentOrganization } from '../presenter.ts';
import { organizationEnvelope, organizationIdParams } from '../schema.ts';
import { decodeLogo } from './image.ts';
import { logoQuery, putLogoBody } from './schema.ts';
import { readLogo, removeLogo, replaceLogo } from './service.ts';

const tag = 'Organizations';

export const organizationLogoRoutes: AnyRoute[] = [
  defineRoute({
    method: 'put',
    path: '/organizations/{organization_id}/logo',
    operationId: 'putOrganizationLogo',
    summary: "Set or replace the organization's logo",
    description:
      'PNG, JPEG, WebP or GIF, base64-encoded in `data`, at most 1 MiB decoded. The bytes must be an image of the declared `content_type` (400 otherwise; 413 when too large). Needs the `organization.update` permission.',
    tag,
    params: organizationIdParams,
    body: putLogoBody,
    bodyLimit: LARGE_BODY_LIMIT,
    response: { status: 200, description: 'The organization with its new `logo_url`', schema: organizationEnvelope },
    errors: [403, 404, 413],
    authorize: member('organization.update'),
    handler: async ({ params, body, actor, deps }) => {
      const bytes = decodeLogo(body.content_type, body.data);
      const { organization, role } = await replaceLogo(deps, actor, params.organization_id, body.content_type, bytes);
      return { organization: presentOrganization(organization, role) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/organizations/{organization_id}/logo',
    operationId: 'deleteOrganizationLogo',
    summary: "Remove the organization's logo",
    description: 'Idempotent. Needs the `organization.update` permission.',
    tag,
    params: organizationIdParams,
    response: { status: 204, description: 'The logo is removed (or there was none); the organization now has `logo_url: null`' },
    errors: [403, 404],
    authorize: member('organization.update'),
    handler: async ({ params, actor, deps }) => {
      await removeLogo(deps, actor, params.organization_id);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/organizations/{organization_id}/logo',
    operationId: 'getOrganizationLogo',
    summary: "The organization's logo image (members only)",
    description: 'Answers the image bytes with their `Content-Type` (image/png, image/jpeg, image/webp or image/gif); 404 when there is no logo.',
    tag,
    params: organizationIdParams,
    query: logoQuery,
    response: { status: 200, description: 'The image bytes' },
    errors: [404],
    authorize: member(),
    handler: async ({ params, actor, deps, ctx }) => {
      const logo = await readLogo(deps, actor, params.organization_id);
      ctx.type = logo.contentType;
      ctx.set('Cache-Control', 'private, max-age=300');
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.body = logo.body;
    },
  }),
];
