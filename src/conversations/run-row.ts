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
  /** Bumped whenever the snapshot is replaced rather than extended: `<stream_epoch>.<length>` names a point of the streamed text. */
  stream_epoch: number;
  heartbeat_at: Date | null;
  answer_message_id: string | null;
  credits_charged: number | null;
  error: { code: string; message: string } | null;
  context: RunContext | null;
  /** The tools the turn may offer (names); null: every tool of the workspace the caller can use. */
  tools: string[] | null;
  /** The last message the turn wrote (a round's tool calls or results); its answer goes under it. Null: none yet. */
  tail_message_id: string | null;
  /** Model usage of the turn's finished tool rounds (the answer's own usage comes with it). */
  rounds_usage: { input_tokens: number; output_tokens: number };
  /** Set while the turn waits for the caller to approve or reject tool calls: when it ends unanswered. */
  awaiting_approval_until: Date | null;
  created_at: Date;
  updated_at: Date;
}
