/**
 * How a provider says a read did not produce a result. The machinery answers `timeout` with 504,
 * `failed` and `malformed` with 502, `refused` (the provider refused the input, e.g. a URL the
 * SSRF policy blocks or a page that is not readable) with 422; nothing is charged for any of them.
 */
export type ReadFailureKind = 'timeout' | 'failed' | 'malformed' | 'refused';

/**
 * A brand from the global symbol registry: `instanceof` fails when the class was loaded twice (a
 * provider built in one module graph, its failure checked in another — tests load src both ways).
 */
const brand = Symbol.for('workspace-platform.ReadFailure');

export class ReadFailure extends Error {
  readonly [brand] = true;
  readonly kind: ReadFailureKind;
  constructor(kind: ReadFailureKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
    this.name = 'ReadFailure';
  }
}

export const isReadFailure = (error: unknown): error is ReadFailure =>
  typeof error === 'object' && error !== null && (error as { [brand]?: unknown })[brand] === true;
