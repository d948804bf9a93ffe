/**
 * Who may read a generation, in SQL: like an asset made in a chat or on a canvas — its creator,
 * the organization's admins, and whoever can read the conversation, canvas or project it was made
 * for (the access module's readable-by predicate of that resource). Only its creator and admins
 * change it.
 */
import { entryOf, readableSql, type Viewer } from '../access/index.ts';

export function readableGenerationSql(alias: string, viewer: Viewer): { sql: string; bindings: unknown[] } {
  if (viewer.administers) return { sql: `${alias}.organization_id = ?`, bindings: [viewer.organizationId] };
  const via = [
    { column: 'conversation_id', type: 'chat_conversation' as const },
    { column: 'canvas_id', type: 'canvas' as const },
    { column: 'project_id', type: 'project' as const },
  ].map(({ column, type }) => {
    const table = entryOf(type)!.table;
    const readable = readableSql(type, 'o', viewer);
    return {
      sql: `(${alias}.${column} IS NOT NULL AND EXISTS (SELECT 1 FROM ${table} o WHERE o.id = ${alias}.${column} AND o.deleted_at IS NULL AND ${readable.sql}))`,
      bindings: readable.bindings,
    };
  });
  return {
    sql: `(${alias}.organization_id = ? AND (${alias}.created_by_id = ? OR ${via.map((v) => v.sql).join(' OR ')}))`,
    bindings: [viewer.organizationId, viewer.userId, ...via.flatMap((v) => v.bindings)],
  };
}
