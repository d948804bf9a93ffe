// The conversations domain's public module: what other domains may import from it.
export { selectListExtras, withListExtras } from './list.ts';
export { conversationColumns, presentConversationListItem } from './presenter.ts';
export { chatToolNames, conversationIdParams, conversationListItemSchema } from './schema.ts';
export { checkToolNames } from './tools/names.ts';
export { openRunEventStreams } from './run-events.ts';
export { runHoldingLock } from './runs.ts';
// The member-removal listener ending their turns that wait for approval.
export { endApprovalsOfRemovedMember } from './tools/approvals.ts';
export { isMessageOf } from './messages.ts';
export {
  currentChatRun,
  type OpenedTurn,
  openScheduledConversation,
  openScheduledTurns,
  type ScheduledTurn,
  type ScheduledTurnStart,
  scheduledTurnCeiling,
  startScheduledTurn,
  stopChatRun,
} from './scheduled.ts';
export type { RunRow as ChatRunRow } from './runs.ts';
export { runSchema as chatRunSchema } from './run-schema.ts';
