// The bulk commands: preview, start and follow a durable bulk action (retry, cancel, delete, redrive),
// and list, show or abort those already made.
import { ApiError, answer, UsageError } from './api.ts';
import { type Command, type Context, FILTER_OPTIONS, filterOf, type Json, reasonOf } from './command.ts';
import { formatTable, time } from './format.ts';

type BulkKind = 'retry' | 'cancel' | 'redrive' | 'delete';
const PAST: Record<BulkKind, string> = { retry: 'retried', cancel: 'cancelled', redrive: 'redriven', delete: 'deleted' };

/**
 * Previews a bulk action, then (unless --dry-run) starts it and follows its progress to the end,
 * printing each change of its counts; an aborted action exits 1.
 */
export async function runBulk(ctx: Context, action: BulkKind, filter: Record<string, unknown>, what: string) {
  const { values, api, print, show } = ctx;
  if (!values.reason && !values['dry-run']) throw new UsageError(`${action} needs --reason (it is recorded in the audit log)`);
  const request = { action, filter } as never;
  const preview = await answer(api.POST('/ops/bulk-actions/preview', { body: request }));
  if (values['dry-run'] || preview.count === 0) {
    show(preview, () => `${preview.count} ${what} would be ${PAST[action]}${preview.count > preview.limit ? ` (at most ${preview.limit} at once)` : ''}\n`);
    return;
  }
  if (!values.json)
    print(
      `${action === 'delete' ? 'deleting' : action === 'cancel' ? 'cancelling' : `${action === 'retry' ? 'retrying' : 'redriving'}`} ${Math.min(preview.count, preview.limit)} ${what}\n`,
    );
  let { bulk_action: bulk } = await answer(api.POST('/ops/bulk-actions', { body: { action, filter, reason: values.reason! } as never }));
  await follow(ctx, bulk.id, bulk, action);
  ({ bulk_action: bulk } = await answer(api.GET('/ops/bulk-actions/{bulk_action_id}', { params: { path: { bulk_action_id: bulk.id } } })));
  if (values.json) print(`${JSON.stringify({ bulk_action: bulk }, null, 2)}\n`);
}

/** Prints a bulk action's progress as it changes, until it is no longer running. */
async function follow(ctx: Context, id: string, first: Json, action: string) {
  const { values, api, print, sleep } = ctx;
  let bulk = first;
  const interval = Number(values.interval ?? 1000);
  let shown = '';
  for (;;) {
    const progress = `${bulk.state}: ${bulk.done + bulk.skipped}/${bulk.total} (${bulk.done} ${PAST[action as BulkKind] ?? 'done'}, ${bulk.skipped} skipped)\n`;
    if (!values.json && progress !== shown) print(progress);
    shown = progress;
    if (bulk.state !== 'running') break;
    await sleep(interval);
    ({ bulk_action: bulk } = await answer(api.GET('/ops/bulk-actions/{bulk_action_id}', { params: { path: { bulk_action_id: id } } })));
  }
  if (!values.json) for (const skipped of bulk.skipped_reasons) print(`  skipped ${skipped.count}: ${skipped.reason}\n`);
  if (bulk.state === 'aborted') throw new ApiError(409, 'aborted', `bulk action ${bulk.id} was aborted after ${bulk.done} of ${bulk.total}`);
}

const bulkCommand = (action: 'retry' | 'cancel' | 'delete'): Command => ({
  takes: [...FILTER_OPTIONS, 'reason', 'dry-run', 'interval'],
  args: [],
  run: (ctx) => runBulk(ctx, action, filterOf(ctx.values), 'jobs'),
});

const bulkRows = (items: Json[]) =>
  formatTable(
    ['ID', 'ACTION', 'STATE', 'DONE', 'SKIPPED', 'TOTAL', 'ORGANIZATION', 'CREATED', 'REASON'],
    items.map((b) => [b.id, b.action, b.state, b.done, b.skipped, b.total, b.organization_id, time(b.created_at), b.reason]),
  );

export const bulkCommands: Record<string, Command> = {
  'bulk retry': bulkCommand('retry'),
  'bulk cancel': bulkCommand('cancel'),
  'bulk delete': bulkCommand('delete'),
  'bulk list': {
    takes: ['organization', 'cursor'],
    args: [],
    async run({ values, api, show }) {
      const page = await answer(api.GET('/ops/bulk-actions', { params: { query: { organization_id: values.organization, cursor: values.cursor } } }));
      show(page, () => `${bulkRows(page.items)}${page.next_cursor ? `\nnext page: --cursor ${page.next_cursor}\n` : ''}`);
    },
  },
  'bulk show': {
    takes: ['interval'],
    args: ['ID'],
    async run(ctx) {
      const { args, api, show } = ctx;
      const { bulk_action: bulk } = await answer(api.GET('/ops/bulk-actions/{bulk_action_id}', { params: { path: { bulk_action_id: args[0]! } } }));
      show({ bulk_action: bulk }, () => {
        const reasons = bulk.skipped_reasons.map((r) => `  skipped ${r.count}: ${r.reason}\n`).join('');
        return `${bulkRows([bulk])}${reasons}`;
      });
    },
  },
  'bulk abort': {
    takes: ['reason'],
    args: ['ID'],
    async run({ args, values, api, show }) {
      const { bulk_action: bulk } = await answer(
        api.POST('/ops/bulk-actions/{bulk_action_id}/abort', { params: { path: { bulk_action_id: args[0]! } }, body: reasonOf(values) }),
      );
      show({ bulk_action: bulk }, () => `bulk action ${bulk.id}: abort requested after ${bulk.done + bulk.skipped} of ${bulk.total}\n`);
    },
  },
};
