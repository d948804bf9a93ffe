/**
 * What a generation costs: the model's credits per unit × the units the request may use (its
 * quote, the ceiling held), and, when done, × the units the provider reported (never more than
 * quoted). Units are the model's billing unit (migrations/…_generation_models.ts).
 */
import { badRequest } from '../core/errors.ts';
import type { z } from '../core/zod.ts';
import type { Deps } from '../platform/deps.ts';
import type { GenerationResult } from '../providers/generation/index.ts';
import type { GenerationModelRow } from './models.ts';
import { unconfiguredProvider } from '../providers/configured.ts';
import type { generationParameters, quoteGenerationBody } from './schema.ts';

type Parameters = z.output<typeof generationParameters>;

/** Units a request may use, by the model's unit (defaults where the caller names none). */
function requestedUnits(model: GenerationModelRow, prompt: string, parameters: Parameters): number {
  switch (model.unit) {
    case 'image':
      return 1;
    case 'second':
      return parameters.duration_seconds ?? Math.min(4, model.max_units);
    case 'frame':
      return parameters.frames ?? Math.min(8, model.max_units);
    case '1k_characters':
      // Speech is billed by the characters read; text by the characters written.
      return Math.ceil((model.kind === 'audio' ? prompt.length : (parameters.max_characters ?? 4000)) / 1000);
    case '1k_tokens':
      return Math.ceil((parameters.max_tokens ?? 1000) / 1000);
  }
}

export interface Quote {
  model: GenerationModelRow;
  units: number;
  credits: number;
}

export async function quoteGeneration(deps: Pick<Deps, 'db' | 'config'>, input: z.output<typeof quoteGenerationBody>): Promise<Quote> {
  const model = await modelFor(deps, input.kind, input.model);
  const units = Math.max(1, requestedUnits(model, input.prompt, input.parameters ?? {}));
  if (units > model.max_units)
    throw badRequest(`parameters: ${model.id} makes at most ${model.max_units} ${model.unit} per generation; this asks for ${units}`, ['parameters']);
  return { model, units, credits: Math.max(1, units * model.credits_per_unit) };
}

/** The units the provider reported, in the model's unit, capped at the quote (a unit it cannot convert counts as quoted). */
export function chargedCredits(quote: Pick<Quote, 'model' | 'units'>, usage: GenerationResult['usage']): number {
  const per: Record<string, (n: number) => number> = {
    image: (n) => n,
    second: (n) => Math.ceil(n),
    frame: (n) => n,
    '1k_characters': (n) => Math.ceil(n / 1000),
    '1k_tokens': (n) => Math.ceil(n / 1000),
  };
  const reported: Record<string, string> = {
    image: 'image',
    seconds: 'second',
    second: 'second',
    frames: 'frame',
    characters: '1k_characters',
    tokens: '1k_tokens',
  };
  const units = reported[usage.unit] === quote.model.unit ? per[quote.model.unit]!(usage.units) : quote.units;
  return Math.min(quote.units, Math.max(0, units)) * quote.model.credits_per_unit;
}

/**
 * The model asked for, else the deployment's default for the kind (GENERATION_DEFAULT_MODELS, else
 * `sandbox-<kind>`): known, of the kind, enabled and of a provider configured here (400 naming `model`).
 */
async function modelFor(deps: Pick<Deps, 'db' | 'config'>, kind: string, id: string | undefined): Promise<GenerationModelRow> {
  const chosen = id ?? deps.config.GENERATION_DEFAULT_MODELS[kind] ?? `sandbox-${kind}`;
  const model = (await deps.db('generation_models').where({ id: chosen }).first()) as GenerationModelRow | undefined;
  const refuse = (why: string) => badRequest(`model: ${why}`, ['model']);
  if (!model) throw refuse(`"${chosen}" is not a generation model (GET /models/public lists them)`);
  if (model.kind !== kind) throw refuse(`"${model.id}" makes ${model.kind}, not ${kind}`);
  if (!model.enabled_by_default) throw refuse(`"${model.id}" is not enabled`);
  const unconfigured = unconfiguredProvider(deps.config, 'generation', model.provider);
  if (unconfigured)
    throw refuse(`"${model.id}" cannot be used here: ${unconfigured}${id === undefined ? ' (the default for this kind, GENERATION_DEFAULT_MODELS)' : ''}`);
  return model;
}
