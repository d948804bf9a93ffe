/**
 * A file refused by a limit of opening it, or an extraction ended on a ceiling; `code` names
 * which (`too_large_uncompressed`, `extraction_timeout`, …), null for a failure that is not one.
 * A plain field, not a parameter property: it crosses into and out of extraction threads by name.
 */
export class FileRefusal extends Error {
  readonly code: string | null;
  constructor(message: string, code: string | null) {
    super(message);
    this.name = 'FileRefusal';
    this.code = code;
  }
}
