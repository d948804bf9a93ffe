// A chat run's row and the statuses in which it holds its conversation's lock.
import type { RunContext } from './context/turn.ts';

export const LIVE_RUN_STATUSES = ['queued', 'running'] as const;

export interface RunRow {
  id: string;
  conversation_id: string;
  organization_id: string;
  user_id: string;
  model: string;
  message_id: string | null;
  status: 'queued' | 'running' | 'succeeded' | 'failed' | 'stopped';
  max_credits: number | null;
  hold_id: string | null;
  snapshot: string;
  heartbeat_at: Date | null;
  answer_message_id: string | null;
  credits_charged: number | null;
  error: { code: string; message: string } | null;
  context: RunContext | null;
  created_at: Date;
  updated_at: Date;
}
