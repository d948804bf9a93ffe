import { presentPage } from '../core/pagination.ts';
import type { ZodType, z } from 'zod';
import type { Actor } from '../access/actor.ts';
import type { Capability } from '../access/types.ts';
import { idParamOf, type ResourceTypeDeclaration } from '../access/registry.ts';
import { type FieldRule, listing, resource as onResource, withFields, within } from './authorize.ts';
import type { Page } from '../core/pagination.ts';
import type { Deps } from '../platform/deps.ts';
import { defineRoute, errorsOf, type AnyRoute, type Route } from './route.ts';

type ErrorStatus = 403 | 404 | 409;

/** What every operation of the builder names at its call site, so `grep "'/assets/{asset_id}'"` finds it. */
interface Operation {
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** The largest body it reads (./route.ts `bodyLimit`), when not the default. */
  bodyLimit?: number;
}

/**
 * The lifecycle every soft-deletable resource shares (create, list, get, update, delete, restore
 * and one-word actions such as archive), declared from what differs between resources: its
 * schemas, its service calls and its words. Each call site keeps the literal path and
 * operationId (checked here against the collection's shape) and gets an ordinary route back.
 *
 * Authorization is declared per operation (./authorize.ts): a create needs `resources.create`
 * in the organization named in its body (403 outside it — never 404, spec §4.1); a list shows
 * only what the caller can read; every by-id operation needs its capability on the resource
 * (read, edit, delete, restore, or the action's own), 404 when unreadable.
 */
export function resourceRoutes<Row>(declaration: ResourceTypeDeclaration<Row>) {
  // The type's declaration (src/<domain>/resource.ts): collection path, `{<resource>_id}`, tag, schema, presenter, noun.
  const resource = { type: declaration.type, noun: declaration.noun, ...declaration.api };
  const idParam = idParamOf(declaration);
  const itemPath = `${resource.path}/{${idParam}}`;
  const idOf = (params: Record<string, string>) => params[idParam]!;
  const { tag, schema, noun } = resource;
  const operation = (method: 'post' | 'get' | 'patch' | 'delete', expectedPath: string, op: Operation) => {
    if (op.path !== expectedPath) throw new Error(`${op.operationId}: path ${op.path} is not ${expectedPath}`);
    return {
      method,
      path: op.path,
      operationId: op.operationId,
      tag,
      summary: op.summary,
      ...(op.description && { description: op.description }),
      ...(op.bodyLimit !== undefined && { bodyLimit: op.bodyLimit }),
    };
  };

  return {
    create<B extends ZodType<{ organization_id: string }>>(
      op: Operation & { body: B; errors?: ErrorStatus[]; run(deps: Deps, actor: Actor, body: z.output<B>): Promise<Row> },
    ): AnyRoute {
      return defineRoute({
        ...operation('post', resource.path, op),
        // Every create honours Idempotency-Key (CONVENTIONS §3).
        idempotent: {},
        body: op.body,
        response: { status: 201, description: `The new ${noun}`, schema },
        errors: [403, ...(op.errors ?? [])],
        authorize: within('body', 'resources.create'),
        handler: async ({ body, actor, deps }) => resource.present(await op.run(deps, actor, body)),
      });
    },

    list<Q extends ZodType, Item>(
      op: Operation & { query: Q; page: ZodType; run(deps: Deps, actor: Actor, query: z.output<Q>): Promise<Page<Item>>; presentItem(row: Item): unknown },
    ): AnyRoute {
      return defineRoute({
        ...operation('get', resource.path, op),
        query: op.query,
        response: { status: 200, description: `A page of ${noun}s`, schema: op.page },
        authorize: listing('query'),
        handler: async ({ query, actor, deps }) => presentPage(await op.run(deps, actor, query), op.presentItem),
      });
    },

    get(op: Operation & { run(deps: Deps, actor: Actor, id: string): Promise<Row> }): AnyRoute {
      return defineRoute({
        ...operation('get', itemPath, op),
        params: resource.idParams,
        response: { status: 200, description: `The ${noun}`, schema },
        errors: [404],
        authorize: onResource(resource.type, 'read', idParam),
        handler: async ({ params, actor, deps }) => resource.present(await op.run(deps, actor, idOf(params))),
      });
    },

    /** `fields`: body fields that need more than `edit` (./authorize.ts `withFields`), decided by `run` on the locked row. */
    update<B extends ZodType>(
      op: Operation & { body: B; fields?: Record<string, FieldRule>; run(deps: Deps, actor: Actor, id: string, body: z.output<B>): Promise<Row> },
    ): AnyRoute {
      return defineRoute({
        ...operation('patch', itemPath, op),
        params: resource.idParams,
        body: op.body,
        response: { status: 200, description: `The updated ${noun}`, schema },
        errors: [403, 404, 409],
        authorize: op.fields ? withFields(onResource(resource.type, 'edit', idParam), op.fields) : onResource(resource.type, 'edit', idParam),
        handler: async ({ params, body, actor, deps }) => resource.present(await op.run(deps, actor, idOf(params), body)),
      });
    },

    /** Soft delete: 204; the resource keeps `deleted_at`/`deleted_by_id` and can be restored. */
    remove(op: Operation & { run(deps: Deps, actor: Actor, id: string): Promise<void> }): AnyRoute {
      return defineRoute({
        ...operation('delete', itemPath, op),
        params: resource.idParams,
        response: { status: 204, description: `Deleted; restorable through POST ${itemPath}/restore` },
        errors: [403, 404],
        authorize: onResource(resource.type, 'delete', idParam),
        handler: async ({ params, actor, deps }) => op.run(deps, actor, idOf(params)),
      });
    },

    restore(op: Operation & { errors?: ErrorStatus[]; run(deps: Deps, actor: Actor, id: string): Promise<Row> }): AnyRoute {
      return this.action({ ...op, capability: 'restore', response: `The restored ${noun}` });
    },

    /**
     * Any other operation on one resource, below its item path (`/conversations/{conversation_id}/run`):
     * the type's tag, and who may call it — `capability` on the resource the path names: 404 when the
     * caller cannot read it, 403 when they can but lack a capability beyond `read`. `errors` lists
     * what the operation answers besides those.
     */
    on<P extends ZodType, Q extends ZodType = ZodType, B extends ZodType = ZodType, R extends ZodType = ZodType>(
      capability: Capability,
      route: Omit<Route<P, Q, B, R>, 'tag' | 'authorize'> & { params: P },
    ): Route<P, Q, B, R> {
      if (!route.path.startsWith(`${itemPath}/`)) throw new Error(`${route.operationId}: path ${route.path} is not below ${itemPath}`);
      return defineRoute({
        ...route,
        tag,
        errors: errorsOf(capability === 'read' ? [404] : [403, 404], route.errors),
        authorize: onResource(resource.type, capability, idParam),
      });
    },

    /** `POST /<collection>/{id}/<verb>` answering the resource (restore, archive, unarchive). */
    action(
      op: Operation & { capability: Capability; response: string; errors?: ErrorStatus[]; run(deps: Deps, actor: Actor, id: string): Promise<Row> },
    ): AnyRoute {
      const verb = op.path.slice(itemPath.length + 1);
      return defineRoute({
        ...operation('post', `${itemPath}/${verb}`, op),
        params: resource.idParams,
        response: { status: 200, description: op.response, schema },
        errors: op.errors ?? [403, 404],
        authorize: onResource(resource.type, op.capability, idParam),
        handler: async ({ params, actor, deps }) => resource.present(await op.run(deps, actor, idOf(params))),
      });
    },
  };
}
