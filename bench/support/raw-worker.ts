/**
 * The raw pg-boss baseline as a worker process of its own (as ours runs in workers/main.ts): a plain
 * PgBoss (createBoss 'worker', the worker's supervision cadence) working RAW_QUEUE with pg-boss's
 * own wake-up (its NOTIFY wakes every slot; idle slots poll every WORKER_POLL_INTERVAL_SECONDS) and a
 * no-op handler (RAW_HANDLER_MS > 0: a sleep). Like ours (src/jobs/slots.ts), each slot that worked
 * a job is woken to fetch again at once (pg-boss's `notifyWorker`;
 * RAW_WAKE=0: pg-boss's own pacing, which bursts only once its cached queue stats show a backlog).
 * Prints `ready` once it works the queue; SIGTERM stops it.
 * Env: DATABASE_URL, RAW_QUEUE, WORKER_CONCURRENCY (4), JOB_ORGANIZATION_CONCURRENCY (8; 0: none),
 * WORKER_POLL_INTERVAL_SECONDS (2), WORKER_SUPERVISE_INTERVAL_SECONDS (30), RAW_HANDLER_MS (0), RAW_WAKE (1),
 * RAW_NOTIFY (unset; a channel: each job's handler ends with NOTIFY <channel>, <job id>, as a metered
 * read's settle tells the waiting request).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createBoss } from '../../src/jobs/boss.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const queue = process.env.RAW_QUEUE;
if (!process.env.DATABASE_URL || !queue) throw new Error('DATABASE_URL and RAW_QUEUE are required');
const concurrency = env('WORKER_CONCURRENCY', 4);
const groupConcurrency = env('JOB_ORGANIZATION_CONCURRENCY', 8);
const poll = env('WORKER_POLL_INTERVAL_SECONDS', 2);
const supervise = env('WORKER_SUPERVISE_INTERVAL_SECONDS', 30);
const handlerMs = env('RAW_HANDLER_MS', 0);

const boss = createBoss(process.env.DATABASE_URL, 'worker', { superviseIntervalSeconds: supervise, monitorIntervalSeconds: supervise });
boss.on('error', (error) => console.error('raw pg-boss error', error));
await boss.start();
const wake = process.env.RAW_WAKE !== '0';
const notify = process.env.RAW_NOTIFY;
let workId = '';
workId = await boss.work(
  queue,
  {
    batchSize: 1,
    localConcurrency: concurrency,
    ...(groupConcurrency > 0 && { groupConcurrency }),
    pollingIntervalSeconds: Math.min(2, poll),
    notifyPollingIntervalSeconds: poll,
    burstWhenReadyExceeds: 1,
  },
  async ([job]) => {
    if (handlerMs > 0) await sleep(handlerMs);
    if (notify) await boss.getDb().executeSql('SELECT pg_notify($1, $2)', [notify, job!.id]);
    // As src/jobs/slots.ts `finished`: the slots holding a job (this one among them) fetch again at once.
    if (wake) for (const slot of boss.getWipData()) if (slot.workId === workId && slot.count > 0) boss.notifyWorker(slot.id);
  },
);
console.log('ready');
let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) return;
  stopping = true;
  void boss.stop({ graceful: true, timeout: 10_000, close: true }).then(() => process.exit(0));
});
