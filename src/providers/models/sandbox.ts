import { createHash } from 'node:crypto';
import type { AssetForModel, AssetModel, ExtractedPrompt, ModelProvider, Voice } from './types.ts';
import { UnknownModelError } from './types.ts';

const models: AssetModel[] = [
  { id: 'sandbox-vision-1', name: 'Sandbox vision (offline, deterministic)', capabilities: ['prompt_extraction'], asset_types: ['image', 'video', '3d'] },
  { id: 'sandbox-text-1', name: 'Sandbox text (offline, deterministic)', capabilities: ['prompt_extraction'], asset_types: ['document', 'text', 'transcript'] },
  { id: 'sandbox-audio-1', name: 'Sandbox audio (offline, deterministic)', capabilities: ['prompt_extraction', 'voice_detection'], asset_types: ['audio'] },
];

/** Offline stand-in: the same asset always yields the same prompt, and the text says it is a sandbox result. */
export class SandboxModelProvider implements ModelProvider {
  readonly name = 'sandbox' as const;

  async listModels(): Promise<AssetModel[]> {
    return models;
  }

  async extractPrompt(asset: AssetForModel, options: { model?: string | undefined; instructions?: string | undefined }): Promise<ExtractedPrompt> {
    const model = pickModel(asset.type, 'prompt_extraction', options.model);
    const subject = asset.title ?? asset.content?.slice(0, 80) ?? 'untitled';
    const fingerprint = digest(asset).slice(0, 8);
    const style = options.instructions ? `; following "${options.instructions.slice(0, 120)}"` : '';
    return {
      model,
      prompt: `[sandbox result] A ${asset.type} of "${subject}"${asset.mime_type ? ` (${asset.mime_type})` : ''}${style}; reference ${fingerprint}.`,
    };
  }

  async detectVoices(asset: AssetForModel): Promise<Voice[]> {
    const seed = parseInt(digest(asset).slice(0, 2), 16);
    const count = 1 + (seed % 2);
    return Array.from({ length: count }, (_, i) => ({
      id: `sandbox-voice-${i + 1}`,
      name: `Sandbox speaker ${i + 1}`,
      language: 'en',
      first_heard_at: i * 4.5,
    }));
  }
}

function pickModel(assetType: string, capability: string, requested: string | undefined): string {
  const usable = models.filter((m) => m.capabilities.includes(capability) && m.asset_types.includes(assetType));
  if (requested === undefined) return usable[0]?.id ?? models[0]!.id;
  if (!usable.some((m) => m.id === requested)) throw new UnknownModelError(requested);
  return requested;
}

function digest(asset: AssetForModel): string {
  return createHash('sha256')
    .update(JSON.stringify([asset.id, asset.type, asset.title, asset.mime_type, asset.url, asset.content]))
    .digest('hex');
}
