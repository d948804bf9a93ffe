// A run's tool calls as live run events (GET /conversations/{id}/run/events): a start, then a result.
import type { Knex } from 'knex';
import { loadToolCalls } from './store.ts';

/** A result's text in an event is cut here (the whole of it is the `tool` message). */
const EVENT_RESULT_CHARS = 2_000;

/**
 * The events not sent yet (`sent`: call row id → what was sent of it): `tool_call` {run_id,
 * tool_call_id, name, arguments, round} once a call is recorded, `tool_result` {run_id,
 * tool_call_id, name, round, status, credits, content} once it has finished.
 */
export async function toolCallEvents(db: Knex, runId: string, sent: Map<string, 'started' | 'finished'>): Promise<[string, unknown][]> {
  const events: [string, unknown][] = [];
  for (const call of await loadToolCalls(db, runId)) {
    const was = sent.get(call.id);
    if (was === 'finished') continue;
    const base = { run_id: runId, tool_call_id: call.tool_call_id, name: call.name, round: call.round };
    if (was === undefined) events.push(['tool_call', { ...base, arguments: call.arguments }]);
    if (call.status !== 'running') {
      const content = call.result ?? '';
      events.push([
        'tool_result',
        {
          ...base,
          status: call.status,
          credits: call.credits,
          content: content.length > EVENT_RESULT_CHARS ? `${content.slice(0, EVENT_RESULT_CHARS)}…` : content,
        },
      ]);
      sent.set(call.id, 'finished');
    } else sent.set(call.id, 'started');
  }
  return events;
}
