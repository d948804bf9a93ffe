import { answerImage } from '../../http/image-answer.ts';
import { type AnyRoute, LARGE_BODY_LIMIT } from '../../http/route.ts';
import { organizationRoute } from '../../http/organization-route.ts';
import { presentOrganization } from '../presenter.ts';
import { organizationEnvelope } from '../schema.ts';
import { decodeLogo } from './image.ts';
import { logoQuery, putLogoBody } from './schema.ts';
import { readLogo, removeLogo, replaceLogo } from './service.ts';

const tag = 'Organizations';

export const organizationLogoRoutes: AnyRoute[] = [
  organizationRoute({
    method: 'put',
    path: '/organizations/{organization_id}/logo',
    operationId: 'putOrganizationLogo',
    summary: "Set or replace the organization's logo",
    description:
      'PNG, JPEG, WebP or GIF, base64-encoded in `data`, at most 1 MiB decoded. The bytes must be an image of the declared `content_type` (400 otherwise; 413 when too large). Needs the `organization.update` permission.',
    tag,
    body: putLogoBody,
    bodyLimit: LARGE_BODY_LIMIT,
    response: { status: 200, description: 'The organization with its new `logo_url`', schema: organizationEnvelope },
    errors: [413],
    permission: 'organization.update',
    handler: async ({ params, body, actor, deps }) => {
      const bytes = decodeLogo(body.content_type, body.data);
      const { organization, role } = await replaceLogo(deps, actor, params.organization_id, body.content_type, bytes);
      return { organization: presentOrganization(organization, role) };
    },
  }),
  organizationRoute({
    method: 'delete',
    path: '/organizations/{organization_id}/logo',
    operationId: 'deleteOrganizationLogo',
    summary: "Remove the organization's logo",
    description: 'Idempotent. Needs the `organization.update` permission.',
    tag,
    response: { status: 204, description: 'The logo is removed (or there was none); the organization now has `logo_url: null`' },
    permission: 'organization.update',
    handler: async ({ params, actor, deps }) => {
      await removeLogo(deps, actor, params.organization_id);
    },
  }),
  organizationRoute({
    method: 'get',
    path: '/organizations/{organization_id}/logo',
    operationId: 'getOrganizationLogo',
    summary: "The organization's logo image (members only)",
    description: 'Answers the image bytes with their `Content-Type` (image/png, image/jpeg, image/webp or image/gif); 404 when there is no logo.',
    tag,
    query: logoQuery,
    response: { status: 200, description: 'The image bytes' },
    handler: async ({ params, actor, deps, ctx }) => answerImage(ctx, await readLogo(deps, actor, params.organization_id)),
  }),
];
