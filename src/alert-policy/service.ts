import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import { badRequest } from '../core/errors.ts';
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import { rolesOf } from '../members/index.ts';
import { defaultAlertPolicy, type AlertPolicy } from './presenter.ts';
import { inTransaction } from '../db/transaction.ts';

interface PolicyRow {
  enabled: boolean;
  low_balance_thresholds: number[];
  notify_roles: string[];
  extra_recipients: string[];
  updated_at: Date;
  updated_by_id: string | null;
}

const columns = ['enabled', 'low_balance_thresholds', 'notify_roles', 'extra_recipients', 'updated_at', 'updated_by_id'];

const fromRow = (row: PolicyRow): AlertPolicy => ({
  enabled: row.enabled,
  lowBalanceThresholds: row.low_balance_thresholds,
  notifyRoles: row.notify_roles,
  extraRecipients: row.extra_recipients,
  updatedAt: row.updated_at,
  updatedById: row.updated_by_id,
});

/**
 * The organization's policy, or the default one when it never set any (credits work reads this).
 * A deleted custom role drops out of `notify_roles` by itself (trigger, migration 20261123030000).
 */
export async function alertPolicyOf(db: Knex, organizationId: string): Promise<AlertPolicy> {
  const row = (await db('organization_alert_policies').where({ organization_id: organizationId }).first(columns)) as PolicyRow | undefined;
  return row ? fromRow(row) : defaultAlertPolicy;
}

/** What a balance movement checks: whether alerts are on and their thresholds. */
export type AlertThresholds = Pick<AlertPolicy, 'enabled' | 'lowBalanceThresholds'>;

/**
 * The organization's thresholds as a column (`alert_thresholds`) of a statement of the caller's —
 * e.g. the hold that may cross one, so the policy costs no round trip of its own; read it with
 * `alertThresholdsOf`.
 */
export const alertThresholdsColumn = (db: Knex, organizationId: string) =>
  db.raw(
    `(SELECT jsonb_build_object('enabled', p.enabled, 'low_balance_thresholds', p.low_balance_thresholds)
        FROM organization_alert_policies p WHERE p.organization_id = ?) AS alert_thresholds`,
    [organizationId],
  );

/** That column's value: the organization's thresholds, or the default policy's when it never set any. */
export function alertThresholdsOf(column: { enabled: boolean; low_balance_thresholds: number[] } | null | undefined): AlertThresholds {
  if (!column) return { enabled: defaultAlertPolicy.enabled, lowBalanceThresholds: defaultAlertPolicy.lowBalanceThresholds };
  return { enabled: column.enabled, lowBalanceThresholds: column.low_balance_thresholds.map(Number) };
}

export async function getAlertPolicy(deps: Pick<Deps, 'db'>, organizationId: string): Promise<AlertPolicy> {
  return alertPolicyOf(deps.db, organizationId);
}

export interface AlertPolicyChanges {
  enabled?: boolean | undefined;
  low_balance_thresholds?: number[] | undefined;
  notify_roles?: string[] | undefined;
  extra_recipients?: string[] | undefined;
}

export async function updateAlertPolicy(deps: Pick<Deps, 'db'>, actor: Actor, organizationId: string, changes: AlertPolicyChanges): Promise<AlertPolicy> {
  return inTransaction(deps.db, async (trx) => {
    if (changes.notify_roles) {
      const known = new Set((await rolesOf(trx, organizationId)).map((role) => role.key));
      const unknown = changes.notify_roles.findIndex((key) => !known.has(key));
      if (unknown >= 0) throw badRequest(`notify_roles.${unknown}: the organization has no role "${changes.notify_roles[unknown]}"`, ['notify_roles', unknown]);
    }
    const currentRow = (await trx('organization_alert_policies').where({ organization_id: organizationId }).forUpdate().first(columns)) as
      | PolicyRow
      | undefined;
    const current = currentRow ? fromRow(currentRow) : defaultAlertPolicy;
    const values = {
      enabled: changes.enabled ?? current.enabled,
      low_balance_thresholds: changes.low_balance_thresholds ?? current.lowBalanceThresholds,
      notify_roles: changes.notify_roles ?? current.notifyRoles,
      extra_recipients: changes.extra_recipients ?? current.extraRecipients,
      updated_by_id: actor.userId,
      updated_at: trx.fn.now(),
    };
    const [row] = (await trx('organization_alert_policies')
      .insert({ organization_id: organizationId, ...values })
      .onConflict('organization_id')
      .merge()
      .returning(columns)) as PolicyRow[];
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'alert_policy.updated',
      subjectType: 'alert_policy',
      subjectId: organizationId,
      data: { changes },
    });
    return fromRow(row!);
  });
}
