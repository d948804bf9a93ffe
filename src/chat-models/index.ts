/**
 * Chat models — the public module (import from here only): the catalog and each organization's
 * copy of a model. `effectiveChatModel` is what a chat run uses (the organization's names,
 * parameters and prices over the catalog's).
 */
export { chatModelCatalog, effectiveChatModel, getChatModel, requireAvailableChatModel, listAvailableChatModels, MANAGE_CHAT_MODELS } from './service.ts';
export { effectivePrices } from './presenter.ts';
export type { ChatModelParameters, ChatModelRow, EffectiveChatModel } from './presenter.ts';
