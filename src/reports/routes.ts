import { member, within } from '../http/authorize.ts';
import { organizationIdParams } from '../core/zod.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { balanceReport } from './balance.ts';
import { inventoryOf } from './inventory.ts';
import { balanceReportSchema, inventoryBody, inventorySchema, usageQueryBody, usageReportSchema } from './schema.ts';
import { usageReport } from './usage.ts';

const tag = 'Reports';
// Reports show money and usage.
const reportReaders = ['credits.view', 'billing.view'] as const;
const access = 'Members with `credits.view` or `billing.view` (403 otherwise).';

export const reportRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/reports/query',
    operationId: 'queryUsageReport',
    summary: 'Credits spent over a date range, by day, member, kind or model',
    description: `Sums the credits ledger's captures. The range spans at most 366 days. ${access} A caller outside the organization gets 403.`,
    tag,
    body: usageQueryBody,
    response: { status: 200, description: 'The usage rows', schema: usageReportSchema },
    errors: [403],
    authorize: within('body', reportReaders),
    handler: async ({ body, deps }) => {
      const rows = await usageReport(deps.db, {
        organizationId: body.organization_id,
        from: body.fromDate,
        to: body.toDate,
        groupBy: body.group_by,
        kinds: body.kinds,
      });
      return {
        report: {
          organization_id: body.organization_id,
          from: body.fromDate.toISOString(),
          to: body.toDate.toISOString(),
          group_by: body.group_by,
          kinds: body.kinds ?? null,
          total_credits: rows.reduce((sum, row) => sum + row.credits, 0),
          rows,
        },
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/reports/inventory',
    operationId: 'queryInventoryReport',
    summary: "Counts of the organization's resources by type, state and project",
    description: `${access} A caller outside the organization gets 403.`,
    tag,
    body: inventoryBody,
    response: { status: 200, description: 'The inventory', schema: inventorySchema },
    errors: [403],
    authorize: within('body', reportReaders),
    handler: async ({ body, deps }) => {
      const items = await inventoryOf(deps.db, body.organization_id);
      const totals: Record<string, number> = {};
      for (const item of items) totals[item.type] = (totals[item.type] ?? 0) + item.count;
      return { inventory: { organization_id: body.organization_id, generated_at: new Date().toISOString(), totals, items } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/organizations/{organization_id}/reports/balance',
    operationId: 'getBalanceReport',
    summary: 'Balance, burn rate and runway (days left at the recent burn rate)',
    description: `${access} 404 for non-members.`,
    tag,
    params: organizationIdParams,
    response: { status: 200, description: 'The balance report', schema: balanceReportSchema },
    errors: [403, 404],
    authorize: member(reportReaders),
    handler: async ({ params, deps }) => {
      return { report: await balanceReport(deps.db, params.organization_id) };
    },
  }),
];
