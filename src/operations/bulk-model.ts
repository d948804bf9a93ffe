/** What a bulk action is, shared by the service that creates it and the job that works it. */
export type BulkKind = 'retry' | 'cancel' | 'redrive' | 'delete';

/** The states each action applies to: a job found in another state when its batch runs is skipped, with the reason. */
export const actionableStates: Record<BulkKind, readonly ('created' | 'retry' | 'active' | 'completed' | 'cancelled' | 'failed')[]> = {
  retry: ['failed', 'cancelled'],
  cancel: ['created', 'retry', 'active'],
  redrive: ['created', 'retry'],
  // Never a running job (cancel it first), as for one job.
  delete: ['created', 'retry', 'completed', 'cancelled', 'failed'],
};

export interface BulkActionRow {
  id: string;
  action: BulkKind;
  filter: Record<string, unknown>;
  organization_id: string | null;
  state: 'running' | 'completed' | 'aborted';
  total: number;
  done: number;
  skipped: number;
  reason: string | null;
  created_by: string;
  request_id: string | null;
  created_at: Date;
  abort_requested_at: Date | null;
  finished_at: Date | null;
}
