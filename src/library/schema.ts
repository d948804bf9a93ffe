import { pageOf, pageQuery } from '../core/pagination.ts';
import { commaSeparated, oneOfWords, timestamp, uuid, z } from '../core/zod.ts';
import type { ResourceTypeDeclaration } from '../access/index.ts';
import { libraryTypeNamesOf } from './types.ts';
import { visibilitySchema } from '../access/index.ts';

/** The library's schemas, for the types it shows (./types.ts). */
export function librarySchemas(declarations: readonly ResourceTypeDeclaration[]) {
  const libraryTypeNames = libraryTypeNamesOf(declarations);
  const typeList = z
    .string()
    .max(200)
    .transform((value, ctx) => {
      const types = [
        ...new Set(
          value
            .split(',')
            .map((t) => t.trim())
            .filter(Boolean),
        ),
      ];
      const unknown = types.find((t) => !(libraryTypeNames as string[]).includes(t));
      if (unknown !== undefined || types.length === 0) {
        ctx.addIssue({
          code: 'custom',
          message: `${unknown === undefined ? 'expected' : `"${unknown}" is not a library type; expected`} comma-separated values of ${libraryTypeNames.join(', ')}`,
        });
        return z.NEVER;
      }
      return types as string[];
    });

  const libraryQuery = z.object({
    organization_id: z.string().min(1).max(64).openapi({ description: 'Organization whose library to list (a non-member gets an empty page).' }),
    types: typeList.optional().openapi({
      type: 'string',
      description: `Comma-separated kinds to include (default all): ${libraryTypeNames.join(', ')}.`,
      pattern: commaSeparated(oneOfWords(libraryTypeNames)),
      example: 'asset,conversation',
    }),
    search: z.string().trim().min(1).max(200).optional().openapi({ description: 'Case-insensitive substring of the title (the name, for skills).' }),
    ...pageQuery,
  });

  const libraryItemSchema = z
    .object({
      type: z.enum(libraryTypeNames).openapi({ description: 'Kind of resource; the id is used with that kind’s own operations.' }),
      id: uuid,
      title: z.string().nullable().openapi({ description: 'Title (a skill’s name).' }),
      subtype: z.string().nullable().openapi({ description: 'The asset type (`image`, `document`…) for assets; null otherwise.' }),
      visibility: visibilitySchema,
      created_by_id: z.string().nullable(),
      created_at: timestamp,
      updated_at: timestamp,
    })
    .strict()
    .openapi('LibraryItem');

  const libraryPage = pageOf(libraryItemSchema).openapi('LibraryPage');
  return { libraryQuery, libraryItemSchema, libraryPage };
}

export const documentIdParams = z.object({ doc_id: uuid.openapi({ description: 'Id of an asset of type document, text or transcript.' }) });
