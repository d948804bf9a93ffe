import { resource } from './authorize.ts';
import { defineRoute, type AnyRoute } from './route.ts';
import type { ZodObject, ZodString } from 'zod';
import { accessRecordSchema } from '../access/schema.ts';
import { getAccessRecord } from '../access/service.ts';
import type { ResourceType } from '../access/types.ts';

/** `GET /<collection>/{id}/access`: the same record as `GET /access/{resource_type}/{id}`. */
export function accessRecordRoute(spec: {
  type: ResourceType;
  path: string;
  idParams: ZodObject<Record<string, ZodString>>;
  operationId: string;
  noun: string;
  tag: string;
}): AnyRoute {
  const idParam = Object.keys(spec.idParams.shape)[0]!;
  if (!spec.path.endsWith(`/{${idParam}}/access`)) throw new Error(`${spec.operationId}: path ${spec.path} does not end in /{${idParam}}/access`);
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
