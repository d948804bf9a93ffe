export interface HoldRow {
  id: string;
  organization_id: string;
  user_id: string | null;
  run_id: string | null;
  reason: string;
  amount: number;
  captured: number;
  released: number;
  status: 'held' | 'captured' | 'released' | 'expired';
  resolution: 'capture' | 'settle' | 'release' | 'expiry' | null;
  conversation_id: string | null;
  message_id: string | null;
  tool_call_id: string | null;
  expires_at: Date;
  resolved_at: Date | null;
  created_at: Date;
}

export const holdColumns = [
  'id',
  'organization_id',
  'user_id',
  'run_id',
  'reason',
  'amount',
  'captured',
  'released',
  'status',
  'resolution',
  'conversation_id',
  'message_id',
  'tool_call_id',
  'expires_at',
  'resolved_at',
  'created_at',
];

export interface CreditHold {
  id: string;
  organizationId: string;
  userId: string | null;
  runId: string | null;
  reason: string;
  amount: number;
  captured: number;
  released: number;
  status: HoldRow['status'];
  resolution: HoldRow['resolution'];
  conversationId: string | null;
  messageId: string | null;
  toolCallId: string | null;
  expiresAt: Date;
  resolvedAt: Date | null;
  createdAt: Date;
}

export const toHold = (row: HoldRow): CreditHold => ({
  id: row.id,
  organizationId: row.organization_id,
  userId: row.user_id,
  runId: row.run_id,
  reason: row.reason,
  amount: row.amount,
  captured: row.captured,
  released: row.released,
  status: row.status,
  resolution: row.resolution,
  conversationId: row.conversation_id,
  messageId: row.message_id,
  toolCallId: row.tool_call_id,
  expiresAt: row.expires_at,
  resolvedAt: row.resolved_at,
  createdAt: row.created_at,
});

export interface CaptureRow {
  id: string;
  hold_id: string;
  capture_key: string | null;
  amount: number;
  tool_call_id: string | null;
  description: string | null;
  created_at: Date;
}

export interface CreditCapture {
  id: string;
  holdId: string;
  captureKey: string | null;
  amount: number;
  toolCallId: string | null;
  description: string | null;
  createdAt: Date;
}

export const toCapture = (row: CaptureRow): CreditCapture => ({
  id: row.id,
  holdId: row.hold_id,
  captureKey: row.capture_key,
  amount: row.amount,
  toolCallId: row.tool_call_id,
  description: row.description,
  createdAt: row.created_at,
});

/** A hold as `to_jsonb(credit_holds)` gives it (the credit functions answer so): timestamps as strings. */
export type HoldJson = Omit<HoldRow, 'expires_at' | 'resolved_at' | 'created_at'> & { expires_at: string; resolved_at: string | null; created_at: string };

/** What `credit_reserve` answers (one row). */
export interface ReserveAnswer {
  outcome: string;
  hold: HoldJson | null;
  detail: Record<string, number> | null;
}

/** What `credit_capture` answers (one row). */
export interface CaptureAnswer {
  outcome: string;
  hold: HoldJson | null;
  capture: (CaptureRow & { created_at: string }) | null;
}

export const holdFromJson = (json: HoldJson): CreditHold =>
  toHold({
    ...json,
    expires_at: new Date(json.expires_at),
    resolved_at: json.resolved_at === null ? null : new Date(json.resolved_at),
    created_at: new Date(json.created_at),
  });

export const captureFromJson = (json: Omit<CaptureRow, 'created_at'> & { created_at: string | Date }): CaptureRow => ({
  ...json,
  created_at: new Date(json.created_at),
});
