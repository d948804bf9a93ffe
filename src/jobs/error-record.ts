/**
 * The one shape a job's error takes wherever it is stored — pg-boss's output of a failed attempt,
 * `job_attempts.error`, `job_ends.reason` — and so wherever the job console shows it (to operators,
 * and to organization owners and admins for their own jobs). Handlers' errors quote whatever they
 * met: e-mail addresses, file paths (stack frames), tokens, signed URLs. Those are replaced before
 * storage; stacks are never stored (the worker's log keeps the full error).
 */
import { z } from '../core/zod.ts';

export const jobErrorRecordSchema = z
  .object({
    code: z.string().describe('snake_case: the failure kind (`failed` when the error names none)'),
    message: z
      .string()
      .describe(
        'The error message with e-mail addresses, file paths, secrets and URL credentials and query strings replaced (`<email>`, `<path>`, `<secret>`, `<credentials>`, `<query>`)',
      ),
    redacted: z.boolean().describe('Whether anything was replaced'),
  })
  .openapi('JobErrorRecord');

export type JobErrorRecord = z.output<typeof jobErrorRecordSchema>;

const MAX_MESSAGE = 2000;

/** Scheme://… up to whitespace, a quote or a bracket that closes it. */
const URL_PATTERN = /\b[a-z][a-z0-9+.-]*:\/\/[^\s'"<>()[\]{}]+/gi;
const BEARER = /\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}/gi;
const KEYED_SECRET =
  /\b((?:api[_-]?key|access[_-]?key|secret(?:[_-]?key)?|client[_-]?secret|token|password|passwd|pwd|authorization|signature)["']?\s*[:=]\s*["']?)(?!(?:Bearer|Basic|Token)\s|<)[^\s"'&,;)]+/gi;
/** JWTs and the usual prefixed API keys (Stripe's, Slack's, GitHub's, AWS access key ids). */
const TOKEN = /\b(?:eyJ[\w-]{5,}\.[\w-]{5,}\.[\w-]*|(?:sk|rk|pk|whsec)_(?:live|test)_\w{8,}|xox[abpr]-[\w-]{10,}|gh[pousr]_\w{20,}|AKIA[0-9A-Z]{16})\b/g;
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
/** An absolute POSIX path of two segments or more (a line:column may follow), not part of a word or a URL. */
const POSIX_PATH = /(?<![\w:/.~-])\/(?:[\w.@%+~-]+\/)+[\w.@%+~-]*(?::\d+){0,2}/g;
const WINDOWS_PATH = /\b[A-Za-z]:\\(?:[^\\\s'"<>|:*?]+\\)*[^\\\s'"<>|:*?]*/g;

/** A URL without its credentials, query string and fragment; a file URL is a path. */
function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text.replace(/\?.*$/, '?<query>');
  }
  if (url.protocol === 'file:') return '<path>';
  if (!url.username && !url.password && !url.search && !url.hash) return text;
  const credentials = url.username || url.password ? '<credentials>@' : '';
  const query = url.search ? '?<query>' : '';
  const fragment = url.hash ? '#<fragment>' : '';
  return `${url.protocol}//${credentials}${url.host}${url.pathname}${query}${fragment}`;
}

/** The text with what must not be stored replaced; `redacted` says whether anything was. */
export function redactErrorText(text: string): { text: string; redacted: boolean } {
  const redacted = text
    .replace(URL_PATTERN, redactUrl)
    .replace(BEARER, '$1 <secret>')
    .replace(KEYED_SECRET, '$1<secret>')
    .replace(TOKEN, '<secret>')
    .replace(EMAIL, '<email>')
    .replace(POSIX_PATH, '<path>')
    .replace(WINDOWS_PATH, '<path>');
  return { text: redacted, redacted: redacted !== text };
}

/** A record from a code and a message (ours, a handler's or an operator's): redacted and cut to length. */
export function jobError(code: string, message: string): JobErrorRecord {
  const { text, redacted } = redactErrorText(message);
  return { code, message: text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE - 1)}…` : text, redacted };
}

/** An error's own snake_case `code` (e.g. an outbound fetch's `upstream_status`); not a driver's SQLSTATE. */
export const snakeCode = (error: unknown): string | null => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[a-z][a-z0-9_]*$/.test(code) ? code : null;
};

/** What a thrown value is stored as: its snake_case code (else `failed`) and its redacted message, never its stack. */
export function jobErrorRecord(error: unknown): JobErrorRecord {
  return jobError(snakeCode(error) ?? 'failed', error instanceof Error ? error.message : String(error));
}

/**
 * A stored record read back, of any age: rows written before records were redacted (`{message,
 * name}`, pg-boss outputs with a stack) are redacted on the way out, so the console never shows them raw.
 */
export function asJobErrorRecord(value: unknown): JobErrorRecord | null {
  if (value === null || value === undefined) return null;
  const stored = (typeof value === 'object' ? value : { message: String(value) }) as { code?: unknown; message?: unknown; redacted?: unknown };
  const record = jobError(typeof stored.code === 'string' ? stored.code : 'failed', typeof stored.message === 'string' ? stored.message : '');
  return { ...record, redacted: record.redacted || stored.redacted === true };
}

/**
 * What the runtime rethrows for pg-boss to retry: pg-boss serializes a failure into the job's
 * output (serialize-error, which honours toJSON), so this is what it stores — the record, not the
 * original error with its stack and own properties.
 */
export class StoredJobError extends Error {
  readonly record: JobErrorRecord;
  constructor(record: JobErrorRecord) {
    super(record.message);
    this.record = record;
    this.name = 'JobError';
  }

  toJSON(): JobErrorRecord {
    return this.record;
  }
}
