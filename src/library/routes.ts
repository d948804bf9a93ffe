import { accessRecord, accessRecordSchema, type ResourceTypeDeclaration } from '../access/index.ts';
import { isAppError, notFound } from '../core/errors.ts';
import type { AssetRow } from '../assets/index.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { documentIdParams, librarySchemas } from './schema.ts';
import { listLibrary } from './service.ts';
import { anyOf, listing, resource } from '../http/authorize.ts';

const tag = 'Library';
const documentTypes = ['document', 'text', 'transcript'];

/** The read, or null when the caller cannot read it (or it does not exist). */
const readableOrNull = <T>(read: Promise<T>): Promise<T | null> =>
  read.catch((error: unknown) => {
    if (isAppError(error, 'not_found')) return null;
    throw error;
  });

/** GET /library over the types whose declarations have a `library` section (./types.ts), and the document access record. */
export const libraryRoutes = (types: readonly ResourceTypeDeclaration[]): AnyRoute[] => [listLibraryRoute(types), ...documentRoutes];

function listLibraryRoute(types: readonly ResourceTypeDeclaration[]): AnyRoute {
  const { libraryPage, libraryQuery } = librarySchemas(types);
  return defineRoute({
    method: 'get',
    path: '/library',
    operationId: 'listLibrary',
    summary: 'List everything the caller can read in an organization, across kinds',
    description: [
      'Live (not deleted) assets, conversations (except scheduled runs), canvases, projects and skills the caller can read,',
      'most recently updated first (`updated_at`, then `id`), keyset paged. Each item names its `type`; use that kind’s own',
      'operations for the full resource. An item updated while paging moves to the front and is not repeated on later pages.',
      'A caller who is not a member of the organization gets an empty page.',
    ].join(' '),
    tag,
    query: libraryQuery,
    response: { status: 200, description: 'A page of library items', schema: libraryPage },
    authorize: listing('query'),
    handler: async ({ query, actor, deps }) => {
      const page = await listLibrary(deps.db, actor, query);
      return {
        items: page.items.map((i) => ({ ...i, created_at: i.created_at.toISOString(), updated_at: i.updated_at.toISOString() })),
        next_cursor: page.next_cursor,
      };
    },
  });
}

const documentRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/documents/{doc_id}/access',
    operationId: 'getDocumentAccess',
    summary: 'Get the caller’s access record for a document',
    description:
      'A document is a canvas, or an asset of type `document`, `text` or `transcript`; the record is that canvas’s or asset’s (`resource_type` `canvas` or `asset`), exactly as `GET /access/{resource_type}/{resource_id}` gives it. Any other id — another asset type, unknown, or unreadable — is 404 with the same body.',
    tag,
    params: documentIdParams,
    response: { status: 200, description: 'The access record (spec 2.7)', schema: accessRecordSchema },
    errors: [404],
    // Which of the two it is (and whether an asset is a document) is the service's to decide: one 404 for all else.
    authorize: anyOf(resource('canvas', 'read', 'doc_id'), resource('asset', 'read', 'doc_id')),
    handler: async ({ params, actor, deps }) => {
      const asset = await readableOrNull(actor.resource<AssetRow>(deps.db, 'asset', params.doc_id, 'read'));
      if (asset) {
        if (!documentTypes.includes(asset.row.type)) throw notFound('document');
        return accessRecord(deps.db, 'asset', asset.row, asset.role, asset.viewer);
      }
      const canvas = await readableOrNull(actor.resource(deps.db, 'canvas', params.doc_id, 'read'));
      if (!canvas) throw notFound('document');
      return accessRecord(deps.db, 'canvas', canvas.row, canvas.role, canvas.viewer);
    },
  }),
];
