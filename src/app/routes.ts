// Composition root of the HTTP API: every operation, by domain. The web process mounts these
// (src/web.ts → createApp) and /openapi.json documents exactly them.
import { accessRoutes } from '../access/routes.ts';
import { activityRoutes } from '../activity/routes.ts';
import { canvasRoutes } from '../canvases/routes.ts';
import { chatModelRoutes } from '../chat-models/routes.ts';
import { generationRoutes } from '../generations/routes.ts';
import { itemProjectsRoutes, projectItemRoutes, projectRoutes } from '../projects/routes.ts';
import { alertPolicyRoutes } from '../alert-policy/routes.ts';
import { assetRoutes } from '../assets/routes.ts';
import { tusDiscoveryRoutes, uploadRoutes } from '../assets/uploads/routes.ts';
import { downloadRoutes, signedFileRoutes } from '../assets/downloads/routes.ts';
import { billingRoutes } from '../billing/routes.ts';
import { billingWebhookRoutes } from '../billing/webhook-route.ts';
import { generationWebhookRoutes } from '../generations/webhook-route.ts';
import { connectorOAuthCallbackRoutes, connectorRoutes } from '../connectors/routes.ts';
import { conversationRoutes } from '../conversations/routes.ts';
import { eventRoutes, registerEventWebhooks } from '../events/index.ts';
import { creditRoutes } from '../credits/routes.ts';
import { invitationRoutes } from '../invitations/routes.ts';
import { libraryRoutes } from '../library/routes.ts';
import { memberRoutes } from '../members/routes.ts';
import { meRoutes } from '../me/routes.ts';
import { organizationLogoRoutes } from '../organizations/logo/routes.ts';
import { organizationRoutes } from '../organizations/routes.ts';
import { reportRoutes } from '../reports/routes.ts';
import { roleRoutes } from '../roles/routes.ts';
import { serviceRoutes } from '../service/routes.ts';
import { skillRoutes } from '../skills/routes.ts';
import { skillListingRoutes } from '../skill-listings/routes.ts';
import { searchRoutes, socialRoutes } from './read-routes.ts';
import { scheduledTaskRoutes } from '../scheduled-tasks/routes.ts';
import { operationsRoutes } from '../operations/routes.ts';
import { opsConsole } from '../operations/console/serve.ts';
import { apiReference } from '../service/docs.ts';
import { opsLiveRefresh } from '../operations/live.ts';
import { socialTrendRoutes } from '../social/routes.ts';
import { webhookRoutes as webhookEndpointRoutes } from '../webhooks/routes.ts';
import type { AnyRoute } from '../http/route.ts';
import { buildOpenApiDocument } from '../http/openapi.ts';
import { registerResourceTypes } from '../access/index.ts';
import { resourceTypes } from './resource-types.ts';

/** Open without a token. */
export const plumbingRoutes: readonly AnyRoute[] = [...serviceRoutes, ...signedFileRoutes, ...tusDiscoveryRoutes, ...connectorOAuthCallbackRoutes];

/** Provider notifications: no bearer token, each authenticates by its own signature. */
export const webhookRoutes: readonly AnyRoute[] = [...billingWebhookRoutes, ...generationWebhookRoutes];

/**
 * Every operation of the API, by domain. Order matters where paths overlap: a literal segment
 * (`/organizations/available-slug`) is listed before the parameter it would otherwise match.
 */
export const apiRoutes: readonly AnyRoute[] = [
  ...meRoutes,
  ...organizationRoutes,
  ...organizationLogoRoutes,
  ...memberRoutes,
  ...roleRoutes,
  ...activityRoutes,
  ...eventRoutes,
  ...alertPolicyRoutes,
  ...invitationRoutes,
  ...accessRoutes,
  ...projectRoutes,
  ...projectItemRoutes(resourceTypes),
  ...itemProjectsRoutes(resourceTypes),
  ...canvasRoutes,
  ...uploadRoutes,
  ...assetRoutes,
  ...downloadRoutes,
  ...creditRoutes,
  ...billingRoutes,
  ...reportRoutes,
  ...conversationRoutes,
  ...skillRoutes,
  ...skillListingRoutes,
  ...libraryRoutes(resourceTypes),
  ...connectorRoutes,
  ...chatModelRoutes,
  ...generationRoutes,
  ...scheduledTaskRoutes,
  ...socialTrendRoutes,
  ...socialRoutes,
  ...searchRoutes,
  ...operationsRoutes,
  ...webhookEndpointRoutes,
];

/** Every route the web process mounts, grouped by how it is authenticated. */
/** Static pages, served before authentication: the operator job console (it calls the /ops API with the operator's token). */
export const pages = [opsConsole(), opsLiveRefresh(), apiReference()];

export const routeTable = { plumbing: plumbingRoutes, webhooks: webhookRoutes, api: apiRoutes, pages, events: registerEventWebhooks };

/** The document served at /openapi.json; `npm run lint:openapi` lints this same document. */
export const openApiDocument = (version: string) => {
  registerResourceTypes(resourceTypes);
  return buildOpenApiDocument([...plumbingRoutes, ...webhookRoutes, ...apiRoutes], { version, webhooks: registerEventWebhooks });
};
