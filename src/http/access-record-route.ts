import { resource } from './authorize.ts';
import { defineRoute, type AnyRoute } from './route.ts';
import { accessRecordSchema } from '../access/schema.ts';
import { getAccessRecord } from '../access/service.ts';
import type { ResourceTypeDeclaration } from '../access/registry.ts';

/** `GET /<collection>/{id}/access`: the same record as `GET /access/{resource_type}/{id}`. */
export function accessRecordRoute(declaration: ResourceTypeDeclaration, op: { path: string; operationId: string }): AnyRoute {
  const { type, noun, api } = declaration;
  const spec = { ...op, type, noun, tag: api.tag, idParams: api.idParams };
  const idParam = Object.keys(spec.idParams.shape)[0]!;
  if (spec.path !== `${api.path}/{${idParam}}/access`) throw new Error(`${spec.operationId}: path ${spec.path} is not ${api.path}/{${idParam}}/access`);
  return defineRoute({
    method: 'get',
    path: spec.path,
    operationId: spec.operationId,
    summary: `The caller’s access record for a ${spec.noun} (same as GET /access/${spec.type}/{${idParam}})`,
    tag: spec.tag,
    params: spec.idParams,
    response: { status: 200, description: 'The access record (spec 2.7)', schema: accessRecordSchema },
    errors: [404],
    authorize: resource(spec.type, 'read', idParam),
    handler: async ({ params, actor, deps }) => getAccessRecord(deps, actor, spec.type, params[idParam]!),
  });
}
