import type { Config } from '../config/schema.ts';

/**
 * Which model providers this deployment can reach: the sandbox always; a real service when its
 * variable is set. Models of another provider are neither listed nor accepted (400 naming the
 * variable), so a request is never accepted for a model that would fail, or be answered by the
 * sandbox and billed as the real model.
 */
const chatVariables: Record<string, keyof Config> = { 'openai-compatible': 'CHAT_API_URL' };
const generationVariables: Record<string, keyof Config> = { 'openai-compatible': 'GENERATION_OPENAI_URL', prediction: 'GENERATION_PREDICTION_URL' };

type Kind = 'chat' | 'generation';
const variablesOf = (kind: Kind) => (kind === 'chat' ? chatVariables : generationVariables);

/** The providers whose models may be listed and used here. */
export function configuredProviders(config: Config, kind: Kind): string[] {
  return ['sandbox', ...Object.entries(variablesOf(kind)).flatMap(([provider, variable]) => (config[variable] ? [provider] : []))];
}

/** Why a model of `provider` cannot be used here (naming the variable that enables it), or undefined when it can. */
export function unconfiguredProvider(config: Config, kind: Kind, provider: string): string | undefined {
  if (configuredProviders(config, kind).includes(provider)) return undefined;
  const variable = variablesOf(kind)[provider];
  return `its provider (${provider}) is not configured on this server${variable ? ` (set ${String(variable)})` : ''}`;
}
