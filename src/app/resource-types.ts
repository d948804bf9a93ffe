// Composition root of the resource types: one line per type, each declared once in its own folder
// (src/<domain>/resource.ts). The composition roots register this list into the access module
// (src/app/deps.ts for every process, src/app/routes.ts for the API and its document); lists, access,
// activity, soft delete/restore, grants, project membership, the library and the inventory read it
// there. The order is the order of the `resource_type` enum in the API document.
import type { ResourceTypeDeclaration } from '../access/index.ts';
import { assetResource } from '../assets/resource.ts';
import { canvasResource } from '../canvases/resource.ts';
import { conversationResource } from '../conversations/resource.ts';
import { projectResource } from '../projects/resource.ts';
import { scheduledTaskResource } from '../scheduled-tasks/resource.ts';
import { skillResource } from '../skills/resource.ts';

export const resourceTypes: readonly ResourceTypeDeclaration[] = [
  assetResource,
  conversationResource,
  canvasResource,
  projectResource,
  scheduledTaskResource,
  skillResource,
];
