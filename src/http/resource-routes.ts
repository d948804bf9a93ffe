import type { ZodObject, ZodType, z } from 'zod';
import type { Caller } from '../core/caller.ts';
import { defineRoute, type AnyRoute } from './route.ts';
import type { Page } from '../core/pagination.ts';
import type { Deps } from '../platform/deps.ts';

type Method = 'post' | 'get' | 'patch' | 'delete';
type ErrorStatus = 403 | 404 | 409;

interface Doc {
  summary: string;
  description?: string;
}

/**
 * The lifecycle every soft-deletable resource shares (create, list, get, update, delete,
 * restore and one-word actions such as archive), declared from what differs between resources:
 * its path and names, its schemas, its service calls and its summaries. Each builder returns an
 * ordinary route, listed beside the resource's own operations.
 */
export function resourceRoutes<Row, P extends ZodObject>(resource: {
  tag: string;
  /** Collection path, e.g. `/assets`. */
  path: string;
  /** `{<resource>_id}` as a one-key zod object. */
  idParams: P;
  /** Singular name as in operation ids: `Asset` → createAsset, listAssets, getAsset… */
  name: string;
  /** Plural when not `name + s` (`Canvases`). */
  plural?: string;
  /** How the resource reads in prose (`asset`). */
  noun: string;
  schema: ZodType;
  present(row: Row): unknown;
}) {
  const idParam = Object.keys(resource.idParams.shape)[0]!;
  const itemPath = `${resource.path}/{${idParam}}`;
  const idOf = (params: unknown) => (params as Record<string, string>)[idParam]!;
  const { tag, schema, noun } = resource;
  const one = (method: Method, path: string, operationId: string, doc: Doc) => ({ method, path, operationId, tag, summary: doc.summary, ...(doc.description && { description: doc.description }) });

  return {
    create<B extends ZodType>(op: Doc & { body: B; errors: ErrorStatus[]; run(deps: Deps, caller: Caller, body: z.output<B>): Promise<Row> }): AnyRoute {
      return defineRoute({
        ...one('post', resource.path, `create${resource.name}`, op),
        body: op.body,
        response: { status: 201, description: `The new ${noun}`, schema },
        errors: op.errors,
        handler: async ({ body, caller, deps }) => resource.present(await op.run(deps, caller, body as z.output<B>)),
      });
    },

    list<Q extends ZodType, Item>(op: Doc & { query: Q; page: ZodType; run(deps: Deps, caller: Caller, query: z.output<Q>): Promise<Page<Item>>; presentItem(row: Item): unknown }): AnyRoute {
      return defineRoute({
        ...one('get', resource.path, `list${resource.plural ?? `${resource.name}s`}`, op),
        query: op.query,
        response: { status: 200, description: `A page of ${noun}s`, schema: op.page },
        handler: async ({ query, caller, deps }) => {
          const page = await op.run(deps, caller, query as z.output<Q>);
          return { items: page.items.map(op.presentItem), next_cursor: page.next_cursor };
        },
      });
    },

    get(op: Doc & { run(deps: Deps, caller: Caller, id: string): Promise<Row> }): AnyRoute {
      return defineRoute({
        ...one('get', itemPath, `get${resource.name}`, op),
        params: resource.idParams,
        response: { status: 200, description: `The ${noun}`, schema },
        errors: [404],
        handler: async ({ params, caller, deps }) => resource.present(await op.run(deps, caller, idOf(params))),
      });
    },

    update<B extends ZodType>(op: Doc & { body: B; run(deps: Deps, caller: Caller, id: string, body: z.output<B>): Promise<Row> }): AnyRoute {
      return defineRoute({
        ...one('patch', itemPath, `update${resource.name}`, op),
        params: resource.idParams,
        body: op.body,
        response: { status: 200, description: `The updated ${noun}`, schema },
        errors: [403, 404, 409],
        handler: async ({ params, body, caller, deps }) => resource.present(await op.run(deps, caller, idOf(params), body as z.output<B>)),
      });
    },

    /** Soft delete: 204; the resource keeps `deleted_at`/`deleted_by_id` and can be restored. */
    remove(op: Doc & { run(deps: Deps, caller: Caller, id: string): Promise<void> }): AnyRoute {
      return defineRoute({
        ...one('delete', itemPath, `delete${resource.name}`, op),
        params: resource.idParams,
        response: { status: 204, description: `Deleted; restorable through POST ${itemPath}/restore` },
        errors: [403, 404],
        handler: async ({ params, caller, deps }) => op.run(deps, caller, idOf(params)),
      });
    },

    restore(op: Doc & { errors?: ErrorStatus[]; run(deps: Deps, caller: Caller, id: string): Promise<Row> }): AnyRoute {
      return this.action({ ...op, verb: 'restore', response: `The restored ${noun}`, errors: op.errors ?? [403, 404] });
    },

    /** `POST /<collection>/{id}/<verb>` answering the resource (restore, archive, unarchive). */
    action(op: Doc & { verb: string; response: string; errors: ErrorStatus[]; run(deps: Deps, caller: Caller, id: string): Promise<Row> }): AnyRoute {
      return defineRoute({
        ...one('post', `${itemPath}/${op.verb}`, `${op.verb}${resource.name}`, op),
        params: resource.idParams,
        response: { status: 200, description: op.response, schema },
        errors: op.errors,
        handler: async ({ params, caller, deps }) => resource.present(await op.run(deps, caller, idOf(params))),
      });
    },
  };
}
