import { presentLifecycle, presentResourceFields, resourceColumnNames, type ResourceColumns } from '../access/index.ts';
import { iso } from '../core/present.ts';
import type { Schedule } from './schedule.ts';
import { previewRuns } from './schedule.ts';

export interface ScheduledTaskRow extends ResourceColumns {
  title: string;
  prompt: string;
  cron: string;
  timezone: string;
  model: string | null;
  skill_id: string | null;
  project_id: string | null;
  email_recipients: string[];
  max_credits_per_run: number | null;
  enabled: boolean;
  next_run_at: Date | null;
}

export const scheduledTaskColumns = [
  ...resourceColumnNames,
  'title',
  'prompt',
  'cron',
  'timezone',
  'model',
  'skill_id',
  'project_id',
  'email_recipients',
  'max_credits_per_run',
  'enabled',
  'next_run_at',
] as const;

export const scheduleOf = (row: Pick<ScheduledTaskRow, 'cron' | 'timezone'>): Schedule => ({ cron: row.cron, timezone: row.timezone });

/** The task, with the next five runs in its timezone (none while it is disabled or deleted). */
export function presentScheduledTask(row: ScheduledTaskRow, now = new Date()) {
  return {
    ...presentResourceFields(row),
    title: row.title,
    prompt: row.prompt,
    schedule: { cron: row.cron, timezone: row.timezone },
    model: row.model,
    skill_id: row.skill_id,
    project_id: row.project_id,
    email_recipients: row.email_recipients,
    max_credits_per_run: row.max_credits_per_run,
    enabled: row.enabled,
    next_run_at: iso(row.next_run_at),
    upcoming_runs: row.next_run_at === null ? [] : previewRuns(scheduleOf(row), new Date(Math.max(now.getTime(), row.next_run_at.getTime()) - 1)),
    ...presentLifecycle(row),
  };
}
