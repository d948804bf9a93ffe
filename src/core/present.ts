/** Timestamps leave the API as ISO 8601 UTC strings; a missing one stays null. */
export function iso(date: Date): string;
export function iso(date: Date | null): string | null;
export function iso(date: Date | null): string | null {
  return date ? date.toISOString() : null;
}
