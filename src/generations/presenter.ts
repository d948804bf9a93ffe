import type { z } from '../core/zod.ts';
import type { generationSchema } from './schema.ts';

export interface GenerationRow {
  id: string;
  organization_id: string;
  created_by_id: string;
  kind: 'image' | 'audio' | 'video' | 'text';
  model: string;
  prompt: string;
  parameters: Record<string, unknown>;
  title: string | null;
  status: 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';
  progress: number | null;
  conversation_id: string | null;
  canvas_id: string | null;
  project_id: string | null;
  call_id: string;
  /** The provider's own job (a prediction id), once it accepted it; never shown. */
  upstream_job_id: string | null;
  quoted_credits: number;
  max_credits: number | null;
  credits_charged: number | null;
  asset_ids: string[];
  sandbox: boolean | null;
  error: { code: string; message: string } | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

export function presentGeneration(row: GenerationRow): z.input<typeof generationSchema> {
  return {
    id: row.id,
    organization_id: row.organization_id,
    created_by_id: row.created_by_id,
    kind: row.kind,
    model: row.model,
    prompt: row.prompt,
    parameters: row.parameters,
    title: row.title,
    status: row.status,
    progress: row.progress,
    conversation_id: row.conversation_id,
    canvas_id: row.canvas_id,
    project_id: row.project_id,
    quoted_credits: row.quoted_credits,
    max_credits: row.max_credits,
    credits_charged: row.credits_charged,
    asset_ids: row.asset_ids,
    sandbox: row.sandbox,
    error: row.error,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    started_at: row.started_at?.toISOString() ?? null,
    finished_at: row.finished_at?.toISOString() ?? null,
  };
}
