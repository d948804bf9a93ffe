/**
 * The port every generation provider implements: one request in, the generated files out.
 * Failures throw `ReadFailure` (src/core/read-failure.ts): `timeout`, `failed`, `malformed`
 * (the provider answered with something unusable) or `refused` (it refused the input); an abort
 * of `signal` rethrows the signal's reason instead.
 */
export const generationKinds = ['image', 'audio', 'video', 'text'] as const;
export type GenerationKind = (typeof generationKinds)[number];

export interface GenerationRequest {
  kind: GenerationKind;
  /** The provider's model id. */
  model: string;
  prompt: string;
  /** Validated by the generations domain; adapters read the few they understand (width, height, voice, duration_seconds…). */
  parameters: Record<string, unknown>;
  signal: AbortSignal;
  /** Called with 0–1 as the provider reports progress (async providers). */
  onProgress?: ((progress: number) => void) | undefined;
  /** Stable id of this generation: adapters send it as an idempotency key so a retried job does not start a second paid job upstream. */
  idempotencyKey: string;
  /** An async provider's job already accepted for this generation (a later attempt): poll it instead of starting another. */
  resume?: string | undefined;
  /** Awaited once an async provider accepted the job, before any wait: the caller records the id to resume with. */
  onSubmitted?: ((providerJobId: string) => Promise<void>) | undefined;
  /**
   * How the adapter waits between polls and before retries; it may throw to end the attempt there
   * (a job's wait beyond its bound continues later, resuming with `resume`). Default: a plain pause.
   */
  wait?: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;
}

export interface GeneratedFile {
  /** A MIME type checked against the bytes (never only the upstream's word for it). */
  contentType: string;
  /** Without the dot: `png`, `wav`, `gif`, `txt`. */
  extension: string;
  bytes: Buffer;
  width?: number;
  height?: number;
  durationMs?: number;
}

export interface GenerationResult {
  files: GeneratedFile[];
  /** What the provider says it used, in its own units (e.g. images, seconds, characters, tokens). */
  usage: { units: number; unit: string };
  /** true for the sandbox */
  sandbox: boolean;
  providerJobId?: string;
}

export interface GenerationProvider {
  readonly name: 'sandbox' | 'openai' | 'prediction';
  generate(request: GenerationRequest): Promise<GenerationResult>;
  /** Best effort: stops an async provider's job that nobody waits for any more (canceled or timed out between two attempts). */
  cancel?(providerJobId: string): Promise<void>;
}
