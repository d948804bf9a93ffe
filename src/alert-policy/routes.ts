import type { AnyRoute } from '../http/route.ts';
import { organizationRoute } from '../http/organization-route.ts';
import { presentAlertPolicy } from './presenter.ts';
import { alertPolicyEnvelope, updateAlertPolicyBody } from './schema.ts';
import { getAlertPolicy, updateAlertPolicy } from './service.ts';

const tag = 'Alert policy';

export const alertPolicyRoutes: AnyRoute[] = [
  organizationRoute({
    method: 'get',
    path: '/organizations/{organization_id}/alert-policy',
    operationId: 'getAlertPolicy',
    summary: 'Get the credit-balance alert policy',
    description:
      'Any member may read it. An organization that never set one gets the default (enabled, threshold 100, owners and admins) with `updated_at: null`.',
    tag,
    response: { status: 200, description: 'The alert policy', schema: alertPolicyEnvelope },
    handler: async ({ params, deps }) => ({ alert_policy: presentAlertPolicy(await getAlertPolicy(deps, params.organization_id)) }),
  }),
  organizationRoute({
    method: 'patch',
    path: '/organizations/{organization_id}/alert-policy',
    operationId: 'updateAlertPolicy',
    summary: 'Change the credit-balance alert policy',
    description: 'Needs `alert_policy.manage`. Fields sent replace the current values. `notify_roles` must name roles of the organization (400).',
    tag,
    body: updateAlertPolicyBody,
    response: { status: 200, description: 'The updated alert policy', schema: alertPolicyEnvelope },
    permission: 'alert_policy.manage',
    handler: async ({ params, body, actor, deps }) => ({
      alert_policy: presentAlertPolicy(await updateAlertPolicy(deps, actor, params.organization_id, body)),
    }),
  }),
];
