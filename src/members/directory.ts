import type { Knex } from 'knex';
import { notFound } from '../core/errors.ts';
import { paginate, type Page } from '../core/pagination.ts';
import type { Deps } from '../platform/deps.ts';
import { memberColumns, type MemberRow } from './presenter.ts';

export interface MemberFilter {
  limit: number;
  cursor?: string | undefined;
  role?: string | undefined;
  search?: string | undefined;
}

const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** One member with their user's e-mail and name. */
export async function findMember(db: Knex, organizationId: string, userId: string): Promise<MemberRow | undefined> {
  return (await db('organization_members as m')
    .join('users as u', 'u.id', 'm.user_id')
    .where({ 'm.organization_id': organizationId, 'm.user_id': userId })
    .first(memberColumns)) as MemberRow | undefined;
}

/** Members in the order they joined (keyset on joined_at, user_id). */
export async function listMembers(deps: Pick<Deps, 'db'>, organizationId: string, filter: MemberFilter): Promise<Page<MemberRow>> {
  const query = deps.db('organization_members as m').join('users as u', 'u.id', 'm.user_id').where('m.organization_id', organizationId).select(memberColumns);
  if (filter.role) query.where('m.role', filter.role);
  if (filter.search) {
    const pattern = likePattern(filter.search);
    query.where((match) => match.whereILike('u.name', pattern).orWhereILike('u.email', pattern));
  }
  return paginate<MemberRow & Record<string, unknown>>(
    query,
    [
      { column: 'm.created_at', direction: 'asc', type: 'timestamp' },
      { column: 'm.user_id', direction: 'asc' },
    ],
    filter,
  );
}

/** Members read themselves freely; anyone else needs `members.view`. */
export async function getMember(deps: Pick<Deps, 'db'>, organizationId: string, userId: string): Promise<MemberRow> {
  const member = await findMember(deps.db, organizationId, userId);
  if (!member) throw notFound('member');
  return member;
}
