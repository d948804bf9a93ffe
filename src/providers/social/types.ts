/** The social data service behind every `POST /social/{operation}` (spec §4.4). */
export interface SocialProvider {
  readonly name: 'sandbox' | 'http';
  /**
   * Performs one operation with an input already validated against its schema; fetches at most
   * `maxPages` result pages. Throws `ReadFailure` (src/core/read-failure.ts) when it cannot answer.
   * The caller validates `result` against the operation's output schema.
   */
  read(operation: string, input: unknown, options: { signal: AbortSignal; maxPages: number }): Promise<{ result: unknown; pages: number }>;
}
