/**
 * How a scheduled task names itself among the service's schedules (job pauses, the operator
 * console): `task:<id>`. The job kernel (src/jobs/pauses.ts) knows schedules only as keys; this
 * domain declares its own, as the platform's cron jobs use `cron:<queue>`.
 */
const prefix = 'task:';

export const taskScheduleKey = (taskId: string): string => `${prefix}${taskId}`;

/** SQL: the schedule key of the task whose id is the column `taskIdColumn`. */
export const taskScheduleKeySql = (taskIdColumn: string): string => `'${prefix}' || ${taskIdColumn}::text`;

/** The task id a schedule key names, or null when it names no scheduled task. */
export const taskIdOfScheduleKey = (key: string): string | null => (key.startsWith(prefix) ? key.slice(prefix.length) : null);
