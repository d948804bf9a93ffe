/** What a model provider is told about an asset (never the caller's identity). */
export interface AssetForModel {
  id: string;
  type: string;
  title: string | null;
  mime_type: string | null;
  url: string | null;
  content: string | null;
}

export interface AssetModel {
  id: string;
  name: string;
  /** What the model can do with assets: `prompt_extraction`, `voice_detection`. */
  capabilities: string[];
  /** Asset types the model accepts. */
  asset_types: string[];
}

export interface Voice {
  id: string;
  name: string;
  language: string | null;
  /** Seconds into the audio where the voice is first heard, when known. */
  first_heard_at: number | null;
}

export interface ExtractedPrompt {
  model: string;
  prompt: string;
}

/**
 * Models that read assets: list them, extract a prompt that would re-create an asset, detect the
 * voices in an audio asset. `sandbox` results are derived offline and say so.
 */
export interface ModelProvider {
  readonly name: 'sandbox' | 'http';
  listModels(): Promise<AssetModel[]>;
  extractPrompt(asset: AssetForModel, options: { model?: string | undefined; instructions?: string | undefined }): Promise<ExtractedPrompt>;
  detectVoices(asset: AssetForModel): Promise<Voice[]>;
}

/** The upstream refused or failed; the API answers 503 rather than 500 so callers retry later. */
export class ModelProviderError extends Error {
  readonly status: number | null;
  constructor(message: string, status: number | null = null) {
    super(message);
    this.status = status;
    this.name = 'ModelProviderError';
  }
}

/** The requested model does not exist or cannot do this (400 naming `model`). */
export class UnknownModelError extends Error {
  readonly model: string;
  constructor(model: string) {
    super(`model "${model}" is not an asset model that can do this`);
    this.model = model;
    this.name = 'UnknownModelError';
  }
}
