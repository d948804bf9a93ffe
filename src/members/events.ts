// Member events (src/core/events.ts): the member as the API presents it, recorded in the
// transaction that added or removed the membership. Visible to those holding `members.view`.
import type { Knex } from 'knex';
import { recordEvent } from '../core/events.ts';
import { findMember } from './directory.ts';
import { presentMember } from './presenter.ts';

/** Records `member.added` or `member.removed`; call while the membership row still exists (before a delete). */
export async function recordMemberEvent(trx: Knex.Transaction, type: 'member.added' | 'member.removed', organizationId: string, userId: string): Promise<void> {
  const member = await findMember(trx, organizationId, userId);
  if (member) await recordEvent(trx, { organizationId, type, subject: null, object: presentMember(member) });
}
