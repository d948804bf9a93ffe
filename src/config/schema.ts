import { z } from 'zod';
import { parseTrustProxy } from './trust-proxy.ts';

const csv = z
  .string()
  .default('')
  .transform((value) =>
    value
      .split(',')
      .map((entry) => entry.trim().toLowerCase())
      .filter(Boolean),
  );

const optionalUrl = z.string().url().optional();

/** One key of `CONNECTOR_SECRET_KEYS`: an id stored beside each ciphertext, and 32 bytes of AES-256 key. */
export interface ConnectorSecretKey {
  id: string;
  key: Buffer;
}

/**
 * `keyId:base64key,…` (the first encrypts, every one decrypts). Parsed and checked at boot, so a
 * malformed or short key stops the process instead of failing the first credential write.
 */
export const connectorSecretKeys = z
  .string()
  .optional()
  .transform((value, ctx): ConnectorSecretKey[] | undefined => {
    if (value === undefined) return undefined;
    const keys: ConnectorSecretKey[] = [];
    const entries = value.split(',').map((entry) => entry.trim());
    for (const [index, entry] of entries.entries()) {
      const match = /^([A-Za-z0-9_.-]{1,32}):([A-Za-z0-9+/_-]+={0,2})$/.exec(entry);
      const key = match ? Buffer.from(match[2]!, 'base64') : undefined;
      if (!match || key!.length !== 32) {
        ctx.addIssue({ code: 'custom', message: `entry ${index + 1} must be keyId:base64key with a 32-byte key (keyId: 1-32 of A-Z a-z 0-9 _ . -)` });
        return z.NEVER;
      }
      if (keys.some((k) => k.id === match[1])) {
        ctx.addIssue({ code: 'custom', message: `entry ${index + 1} repeats the key id "${match[1]}"` });
        return z.NEVER;
      }
      keys.push({ id: match[1]!, key: key! });
    }
    return keys;
  });
const emptyAsUnset = (value: unknown) => (value === '' ? undefined : value);

/** PROVIDER_LIMITS: a JSON object of provider → its concurrency and calls per minute across the fleet. */
export const limitedProviders = ['chat', 'social', 'search'] as const;
export type LimitedProvider = (typeof limitedProviders)[number];
export type ProviderLimit = z.output<typeof providerLimit>;
const providerLimit = z.object({ concurrency: z.number().int().min(1).max(10_000).optional(), per_minute: z.number().int().min(1).optional() }).strict();
const providerLimitsSchema = z.preprocess(
  (value) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  },
  z.partialRecord(z.enum(limitedProviders), providerLimit),
);
export type ProviderLimits = z.output<typeof providerLimitsSchema>;

/**
 * Every environment variable the processes read. Parsed once at boot; a bad value stops the
 * process with one line naming the variable (see `loadConfig`).
 */
export const configSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    HOST: z.string().default('0.0.0.0'),
    DATABASE_URL: z.preprocess(
      emptyAsUnset,
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
        .optional(),
    ),
    DATA_DIR: z.string().default('.data'),
    /** The embedded PostgreSQL's port (loopback only) when DATABASE_URL is unset; unset → a free port, kept in DATA_DIR. */
    EMBEDDED_PG_PORT: z.preprocess(emptyAsUnset, z.coerce.number().int().min(1).max(65535).optional()),
    JWT_SECRET: z.preprocess(emptyAsUnset, z.string().min(32, 'must be at least 32 characters').optional()),
    JWKS_URI: z.preprocess(emptyAsUnset, optionalUrl),
    JWT_ISSUER: z.preprocess(emptyAsUnset, z.string().optional()),
    JWT_AUDIENCE: z.preprocess(emptyAsUnset, z.string().optional()),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(600),
    /** Requests without a valid token, per client address and minute (shared across web processes). */
    RATE_LIMIT_PER_ADDRESS_PER_MINUTE: z.coerce.number().int().min(1).default(120),
    /**
     * Whose X-Forwarded-For to believe for the client's address (./trust-proxy.ts): unset (none: the
     * socket's peer), a hop count (`1` behind Heroku's router), or proxy addresses/CIDRs, comma-separated.
     */
    TRUST_PROXY: z
      .string()
      .optional()
      .transform((value, ctx) => {
        const trust = parseTrustProxy(value);
        if (typeof trust === 'string') {
          ctx.addIssue({ code: 'custom', message: trust });
          return z.NEVER;
        }
        return trust;
      }),
    OUTBOUND_ALLOWLIST: csv,
    STARTER_CREDITS: z.coerce.number().int().min(0).default(1000),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Base URL printed at start and used in links sent to users (invitation e-mails). */
    PUBLIC_URL: z.preprocess(emptyAsUnset, optionalUrl),
    /** SMTP connection URL (smtp:// or smtps://); unset → sandbox e-mail outbox. */
    SMTP_URL: z.preprocess(
      emptyAsUnset,
      z
        .string()
        .regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')
        .optional(),
    ),
    EMAIL_FROM: z.string().default('Workspace Platform <no-reply@workspace.local>'),
    /** Tests only: the sandbox e-mail provider waits this long after recording a message (crash tests). */
    EMAIL_SANDBOX_DELAY_MS: z.coerce.number().int().min(0).default(0),
    /** S3-compatible object storage; unset → local disk under DATA_DIR/storage. */
    STORAGE_S3_ENDPOINT: z.preprocess(emptyAsUnset, optionalUrl),
    STORAGE_S3_BUCKET: z.preprocess(emptyAsUnset, z.string().optional()),
    STORAGE_S3_REGION: z.string().default('us-east-1'),
    STORAGE_S3_ACCESS_KEY_ID: z.preprocess(emptyAsUnset, z.string().optional()),
    STORAGE_S3_SECRET_ACCESS_KEY: z.preprocess(emptyAsUnset, z.string().optional()),
    /** Stripe billing; unset STRIPE_SECRET_KEY → sandbox billing. STRIPE_API_BASE points the client elsewhere (tests: a fake Stripe). */
    STRIPE_SECRET_KEY: z.preprocess(emptyAsUnset, z.string().optional()),
    STRIPE_WEBHOOK_SECRET: z.preprocess(emptyAsUnset, z.string().optional()),
    STRIPE_API_BASE: z.preprocess(emptyAsUnset, optionalUrl),
    /** Model service reading assets (prompt extraction, voices); unset → sandbox models. */
    MODELS_API_URL: z.preprocess(emptyAsUnset, optionalUrl),
    MODELS_API_KEY: z.preprocess(emptyAsUnset, z.string().optional()),
    /** OpenAI-compatible chat completions (`…/v1/chat/completions`) serving the catalog's `openai-compatible` models; unset → only the sandbox's (`sandbox-chat` is always the sandbox's). */
    CHAT_API_URL: z.preprocess(emptyAsUnset, optionalUrl),
    CHAT_API_KEY: z.preprocess(emptyAsUnset, z.string().optional()),
    /** The chat model a run uses when it names none (a catalog id whose provider is configured). */
    CHAT_DEFAULT_MODEL: z.string().min(1).max(64).default('sandbox-chat'),
    /** Pause between the sandbox chat model's words (tests slow it down to stop a run mid-stream). */
    CHAT_SANDBOX_DELAY_MS: z.coerce.number().int().min(0).max(10_000).default(0),
    /** How often a worker writes the text all its streaming chat turns added (one statement and one NOTIFY per tick), and how much unsent text one turn may buffer before its model read waits. */
    CHAT_STREAM_TICK_MS: z.coerce.number().int().min(5).max(1_000).default(50),
    CHAT_STREAM_BUFFER_CHARS: z.coerce.number().int().min(256).max(10_000_000).default(65_536),
    /** Chat tools: model → tool calls → model rounds a turn may take (then one last answer without tools), each call's time limit, and how long an MCP connector's listed tools are reused. */
    CHAT_TOOL_MAX_ROUNDS: z.coerce.number().int().min(1).max(50).default(8),
    CHAT_TOOL_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(60_000),
    CHAT_CONNECTOR_TOOLS_TTL_SECONDS: z.coerce.number().int().min(0).default(600),
    /** How long a turn waits for the caller to approve or reject its tool calls before it ends (its hold released). */
    CHAT_APPROVAL_TTL_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 3600)
      .default(3600),
    /**
     * Who is an operator (catalog moderation; the job console): a token whose OPERATOR_CLAIM claim
     * equals, or (an array) contains, OPERATOR_CLAIM_VALUE — or a user id listed in OPERATOR_USER_IDS.
     */
    OPERATOR_CLAIM: z
      .string()
      .regex(/^[A-Za-z0-9_.:/-]{1,100}$/)
      .default('roles'),
    OPERATOR_CLAIM_VALUE: z.string().min(1).max(100).default('operator'),
    OPERATOR_USER_IDS: z
      .string()
      .default('')
      .transform((value) =>
        value
          .split(',')
          .map((entry) => entry.trim())
          .filter(Boolean),
      ),
    /** Scheduled tasks may not fire more often than this (a cron closer than it is refused, 400 on schedule.cron). */
    SCHEDULED_TASK_MIN_INTERVAL_SECONDS: z.coerce.number().int().min(60).default(300),
    /** Social data service (`POST {url}/v1/social/{operation}`); unset → deterministic sandbox data. */
    SOCIAL_API_URL: z.preprocess(emptyAsUnset, optionalUrl),
    SOCIAL_API_KEY: z.preprocess(emptyAsUnset, z.string().optional()),
    /** Web search service; unset → deterministic sandbox results. */
    SEARCH_API_URL: z.preprocess(emptyAsUnset, optionalUrl),
    SEARCH_API_KEY: z.preprocess(emptyAsUnset, z.string().optional()),
    /** Public trends (GET /social/trends…) are refetched by a worker when older than this. */
    SOCIAL_TRENDS_TTL_SECONDS: z.coerce.number().int().min(10).default(900),
    /** A failed trends refresh is remembered this long: meanwhile requests for that region answer 502 without asking the provider. */
    SOCIAL_TRENDS_FAILURE_TTL_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
    /** Generation services: an OpenAI-compatible API (images, speech, text) and an asynchronous prediction API; unset → models of that service answer 422. */
    GENERATION_OPENAI_URL: z.preprocess(emptyAsUnset, optionalUrl),
    GENERATION_OPENAI_KEY: z.preprocess(emptyAsUnset, z.string().optional()),
    GENERATION_PREDICTION_URL: z.preprocess(emptyAsUnset, optionalUrl),
    GENERATION_PREDICTION_KEY: z.preprocess(emptyAsUnset, z.string().optional()),
    /**
     * The prediction service's completion webhook: the public URL of POST /webhooks/generation-predictions
     * sent with each prediction, and the secret (`whsec_…`) it signs deliveries with. A delivery wakes the
     * generation's waiting job at once; unset, the job finds the end by its next poll.
     */
    GENERATION_PREDICTION_WEBHOOK_URL: z.preprocess(emptyAsUnset, optionalUrl),
    GENERATION_PREDICTION_WEBHOOK_SECRET: z.preprocess(emptyAsUnset, z.string().optional()),
    /** The generation model per kind when a request names none: `image=gpt-image-1,text=gpt-4o-mini-text`; a kind not named uses `sandbox-<kind>`. */
    GENERATION_DEFAULT_MODELS: z
      .string()
      .default('')
      .transform((value, ctx) => {
        const defaults: Record<string, string> = {};
        for (const entry of value
          .split(',')
          .map((part) => part.trim())
          .filter(Boolean)) {
          const [kind, model] = entry.split('=').map((part) => part.trim());
          if (!kind || !model || !['image', 'audio', 'video', 'text'].includes(kind)) {
            ctx.addIssue({ code: 'custom', message: `"${entry}" is not <kind>=<model> with kind image, audio, video or text` });
            return z.NEVER;
          }
          defaults[kind] = model;
        }
        return defaults;
      }),
    /** Pause the sandbox generation spreads over its progress steps (tests slow it down to cancel mid-run). */
    GENERATION_SANDBOX_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(0),
    /** How long a generation may run before it fails (and its hold is released). */
    GENERATION_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(1000)
      .default(10 * 60_000),
    /** How long a metered read (social, search, read-url) may take before it answers 504 and is charged nothing. */
    READ_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(30_000),
    /** Link import limits: whole download (redirects and body included) and body size. */
    ASSET_IMPORT_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
    ASSET_IMPORT_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1)
      .default(50 * 1024 * 1024),
    /** Enrichment refuses (before decoding) images of more pixels than this: decompression bombs. Tests pause after each recorded stage. */
    ASSET_IMAGE_MAX_PIXELS: z.coerce.number().int().min(1).default(100_000_000),
    ASSET_ENRICHMENT_STAGE_DELAY_MS: z.coerce.number().int().min(0).max(600_000).default(0),
    /**
     * Ceilings of opening a file (src/assets/extraction): what zip-based documents and PDF streams
     * may inflate to (bytes actually inflated) and how many entries a zip may hold, checked before
     * parsing; PDF pages; and the CPU time, wall-clock time and memory (heap and buffers) of the
     * thread each extraction runs in, which is ended on its ceiling, never the worker process.
     */
    ASSET_EXTRACTION_MAX_UNCOMPRESSED_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .default(100 * 1024 * 1024),
    ASSET_EXTRACTION_MAX_ENTRIES: z.coerce.number().int().min(1).default(10_000),
    /** The largest stored file enrichment reads into memory and opens; a larger one is refused (`file_too_large`) before it is read. */
    ASSET_EXTRACTION_MAX_FILE_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .default(256 * 1024 * 1024),
    ASSET_PDF_MAX_PAGES: z.coerce.number().int().min(1).default(2_000),
    ASSET_EXTRACTION_CPU_SECONDS: z.coerce.number().min(0.1).max(3600).default(30),
    ASSET_EXTRACTION_TIMEOUT_SECONDS: z.coerce.number().min(0.1).max(3600).default(120),
    ASSET_EXTRACTION_MEMORY_MB: z.coerce.number().int().min(16).max(16_384).default(192),
    /**
     * Direct uploads (tus, src/assets/uploads): the largest file (413 beyond, at creation), what one
     * organization may hold in uploaded files, finished and in progress (409 beyond, at creation),
     * and how long an unfinished upload lives before the cleanup job ends it and removes its bytes.
     */
    UPLOAD_MAX_FILE_BYTES: z.coerce
      .number()
      .int()
      .min(1)
      .default(5 * 1024 ** 3),
    UPLOAD_ORGANIZATION_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .min(1)
      .default(50 * 1024 ** 3),
    UPLOAD_EXPIRES_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .default(24 * 3600),
    /**
     * Download URLs (POST /assets/{id}/download-url): their default and longest lifetime, and the
     * HMAC key of the API-served ones (no object storage). Unset key → generated once into DATA_DIR
     * (every process of one host shares it; set it when web processes run on several hosts).
     */
    DOWNLOAD_URL_DEFAULT_SECONDS: z.coerce.number().int().min(1).default(300),
    DOWNLOAD_URL_MAX_SECONDS: z.coerce.number().int().min(1).default(3600),
    DOWNLOAD_URL_SECRET: z.preprocess(emptyAsUnset, z.string().min(32, 'must be at least 32 characters').optional()),
    /**
     * Connections per process (docs/deployment.md "Connection budget", src/db/budget.ts): the knex pool's
     * largest size (default: web 10; worker 16, whatever its slots) and pg-boss's own pool
     * (default: web 0, worker 8; 0: pg-boss runs on the knex pool). Each process also holds one
     * LISTEN connection, shared by every channel.
     */
    DB_POOL_MAX: z.coerce.number().int().min(1).max(500).optional(),
    /**
     * What a statement that asks the pool for a second connection from inside an open transaction
     * does (src/db/transaction-guard.ts): `warn` logs it once per call site and goes on, `throw`
     * fails it (the test suite), `off` checks nothing.
     */
    DB_TRANSACTION_GUARD: z.enum(['off', 'warn', 'throw']).default('warn'),
    PGBOSS_POOL_MAX: z.coerce.number().int().min(0).max(100).optional(),
    /**
     * Limits per provider across the fleet (src/providers/limits.ts), JSON:
     * `{"chat": {"concurrency": 20, "per_minute": 600}, "social": {"concurrency": 8}}` (providers
     * `chat`, `social`, `search`). Work over a limit waits queued (snoozed), not failed; a 429's
     * Retry-After pauses the provider too. Unset: no limit (the sandboxes' default).
     */
    PROVIDER_LIMITS: z.preprocess(emptyAsUnset, providerLimitsSchema.optional()),
    /** Worker tuning; operators rarely change these, tests shorten them. */
    WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
    /**
     * Slots per worker of each queue whose work waits (src/jobs/define.ts `nature`: chat turns,
     * generations, metered reads, imports, deliveries, e-mail): a waiting slot holds no database
     * connection, so hundreds cost little; they are opened as work arrives, not all at start.
     */
    WORKER_WAITING_SLOTS: z.coerce.number().int().min(1).max(4096).default(128),
    /** Slots per worker of each queue whose work computes (enrichment, extraction, housekeeping); unset → WORKER_CONCURRENCY. */
    WORKER_COMPUTING_SLOTS: z.coerce.number().int().min(1).max(256).optional(),
    WORKER_SUPERVISE_INTERVAL_SECONDS: z.coerce.number().int().min(1).default(30),
    /**
     * Webhook deliveries each worker sends at once (its own slots, beside WORKER_CONCURRENCY's): an
     * attempt mostly waits on its receiver (up to 10 s), holding no connection meanwhile, and each
     * endpoint takes at most 4 of them (src/webhooks/jobs.ts), so the default leaves room for 16
     * endpoints at their limit: slow ones cannot crowd out healthy ones.
     */
    WEBHOOK_DELIVERY_CONCURRENCY: z.coerce.number().int().min(1).max(512).default(64),
    /**
     * A job's wait longer than this (a prediction still running, an upstream's "come back in N s")
     * holds no slot: the attempt ends and the same job continues after the wait (src/jobs/waits.ts).
     */
    JOB_WAIT_BOUND_SECONDS: z.coerce.number().min(0).max(600).default(10),
    /** Backstop poll while NOTIFY is live: retries and delayed jobs are not notified, only found by this poll. */
    WORKER_POLL_INTERVAL_SECONDS: z.coerce.number().min(0.5).default(2),
    /** A worker that lost the database probes it with exponential backoff up to this many seconds. */
    WORKER_DB_RETRY_MAX_SECONDS: z.coerce.number().min(0.1).default(30),
    /** Each worker writes its heartbeat (and the jobs it holds) to job_workers this often. */
    WORKER_HEARTBEAT_SECONDS: z.coerce.number().min(0.2).max(60).default(5),
    /** A worker whose heartbeat is older than this is shown as lost, and its jobs are failed so they are retried. */
    WORKER_LOST_AFTER_SECONDS: z.coerce.number().min(1).default(30),
    /**
     * Fairness between tenants (src/jobs/fairness.ts): organizations share each queue by weight, by
     * what each has in flight; set, also a hard cap of this many jobs per organization and queue
     * across all workers.
     */
    JOB_ORGANIZATION_CONCURRENCY: z.coerce.number().int().min(1).max(1000).optional(),
    /** The job console's statement timeout: a list over millions of rows answers 503 instead of hanging the database. */
    OPS_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
    /** Bulk actions work this many jobs per batch, pausing between batches so they never crowd out live work. */
    OPS_BULK_BATCH_SIZE: z.coerce.number().int().min(1).max(5000).default(200),
    OPS_BULK_PAUSE_MS: z.coerce.number().int().min(0).default(200),
    /** Alert thresholds on GET /ops/queues and /metrics: oldest ready job older than this (seconds)… */
    OPS_ALERT_BACKLOG_AGE_SECONDS: z.coerce.number().int().min(1).default(300),
    /** …failed share of the last 15 minutes' finished attempts above this (with at least 10 attempts)… */
    OPS_ALERT_FAILURE_RATE: z.coerce.number().min(0).max(1).default(0.2),
    /** …or no live worker serving a queue for this many seconds. */
    OPS_ALERT_NO_WORKER_SECONDS: z.coerce.number().int().min(1).default(60),
    /** Milliseconds a web process waits for in-flight requests, and a worker for its running jobs, on SIGTERM or Ctrl-C. */
    SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
    /** Connector credential encryption keys; unset → development/test generate one into DATA_DIR, production refuses to store credentials (503). */
    CONNECTOR_SECRET_KEYS: z.preprocess(emptyAsUnset, connectorSecretKeys),
    /**
     * Bearer token a Prometheus scrape of `GET /metrics` must send (compared in constant time). Set
     * alone, the web process serves /metrics on its API port behind it; with METRICS_PORT or
     * WORKER_METRICS_PORT it guards those ports too. Unset with no metrics port: the web process
     * answers `GET /metrics` 404 — metrics are never public by default.
     */
    METRICS_TOKEN: z.preprocess(emptyAsUnset, z.string().min(16).max(256).regex(/^\S+$/, 'must not contain whitespace').optional()),
    /** The web process serves `GET /metrics` on this separate port only (not on PORT); open unless METRICS_TOKEN is set. 0 picks a free port. */
    METRICS_PORT: z.preprocess(emptyAsUnset, z.coerce.number().int().min(0).max(65535).optional()),
    /** Each worker process serves `GET /metrics` on this port (behind METRICS_TOKEN when set); unset → workers serve no metrics. */
    WORKER_METRICS_PORT: z.preprocess(emptyAsUnset, z.coerce.number().int().min(0).max(65535).optional()),
  })
  .superRefine((env, ctx) => {
    if (env.NODE_ENV === 'production' && !env.JWT_SECRET && !env.JWKS_URI) {
      ctx.addIssue({ code: 'custom', path: ['JWT_SECRET'], message: 'is required in production unless JWKS_URI is set' });
    }
    for (const name of ['STORAGE_S3_BUCKET', 'STORAGE_S3_ACCESS_KEY_ID', 'STORAGE_S3_SECRET_ACCESS_KEY'] as const) {
      if (env.STORAGE_S3_ENDPOINT && !env[name]) ctx.addIssue({ code: 'custom', path: [name], message: 'is required when STORAGE_S3_ENDPOINT is set' });
    }
  });

export type Config = z.output<typeof configSchema>;
