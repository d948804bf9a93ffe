// The scheduled-tasks domain's public module (issue 11, in progress): so far the schedule math.
export { nextRunAfter, nextRuns, previewRuns, type Schedule, slotsBetween, validateSchedule } from './schedule.ts';
export { triggerTaskRun } from './run-service.ts';
export { taskIdOfScheduleKey, taskScheduleKey } from './schedule-key.ts';
export { scheduleOf, type ScheduledTaskRow } from './presenter.ts';
export { runSchema as scheduledTaskRunSchema } from './schema.ts';
