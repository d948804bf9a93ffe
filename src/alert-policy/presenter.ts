import type { z } from '../core/zod.ts';
import type { alertPolicySchema } from './schema.ts';

export interface AlertPolicy {
  enabled: boolean;
  lowBalanceThresholds: number[];
  notifyRoles: string[];
  extraRecipients: string[];
  updatedAt: Date | null;
  updatedById: string | null;
}

/** What an organization that never set a policy gets: owners and admins alerted at 100 credits. */
export const defaultAlertPolicy: AlertPolicy = {
  enabled: true,
  lowBalanceThresholds: [100],
  notifyRoles: ['owner', 'admin'],
  extraRecipients: [],
  updatedAt: null,
  updatedById: null,
};

export function presentAlertPolicy(policy: AlertPolicy): z.input<typeof alertPolicySchema> {
  return {
    enabled: policy.enabled,
    low_balance_thresholds: policy.lowBalanceThresholds,
    notify_roles: policy.notifyRoles,
    extra_recipients: policy.extraRecipients,
    updated_at: policy.updatedAt?.toISOString() ?? null,
    updated_by_id: policy.updatedById,
  };
}
