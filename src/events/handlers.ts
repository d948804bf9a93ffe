// Worker side of the events jobs.
import type { JobContext } from '../jobs/define.ts';
import { deleteOldEvents } from './retention.ts';

export async function deleteOldEventsHandler(_payload: unknown, { deps, log }: JobContext): Promise<void> {
  const deleted = await deleteOldEvents(deps.db);
  if (deleted) log.info({ deleted }, 'events past their retention deleted');
}
