import { resource } from './authorize.ts';
import { defineRoute, type AnyRoute } from './route.ts';
import { accessRecordSchema } from '../access/schema.ts';
import { getAccessRecord } from '../access/service.ts';
import { idParamOf, type ResourceTypeDeclaration } from '../access/registry.ts';

/** `GET /<collection>/{id}/access`: the same record as `GET /access/{resource_type}/{id}`. The call site names its path literally. */
export function accessRecordRoute(declaration: ResourceTypeDeclaration, op: { path: string; operationId: string }): AnyRoute {
  const { type, noun, api } = declaration;
  const idParam = idParamOf(declaration);
  if (op.path !== `${api.path}/{${idParam}}/access`) throw new Error(`${op.operationId}: path ${op.path} is not ${api.path}/{${idParam}}/access`);
  return defineRoute({
    method: 'get',
    path: op.path,
    operationId: op.operationId,
    summary: `The caller’s access record for a ${noun} (same as GET /access/${type}/{${idParam}})`,
    tag: api.tag,
    params: api.idParams,
    response: { status: 200, description: 'The access record (spec 2.7)', schema: accessRecordSchema },
    errors: [404],
    authorize: resource(type, 'read', idParam),
    handler: async ({ params, actor, deps }) => getAccessRecord(deps, actor, type, params[idParam]!),
  });
}
