// How the CLI prints answers: aligned tables, short times and ages, key: value blocks.

/** Left-aligned columns (numbers right-aligned), two spaces apart, a header line on top. */
export function formatTable(headers: string[], rows: unknown[][]): string {
  const text = rows.map((row) => row.map(cell));
  const widths = headers.map((header, i) => Math.max(header.length, ...text.map((row) => row[i]!.length)));
  const numeric = headers.map(
    (_, i) => rows.some((row) => typeof row[i] === 'number') && rows.every((row) => typeof row[i] === 'number' || row[i] === null || row[i] === undefined),
  );
  const line = (values: string[]) =>
    values
      .map((value, i) => (numeric[i] ? value.padStart(widths[i]!) : value.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[line(headers), ...text.map(line)].join('\n')}\n`;
}

export function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (typeof value === 'string') return value.replace(/[\r\n\t]+/g, ' ');
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** `2026-11-23 07:05:12Z`: sortable, short, unambiguous. */
export const time = (iso: unknown) => (typeof iso === 'string' ? `${iso.slice(0, 19).replace('T', ' ')}Z` : '-');
export const age = (seconds: unknown) => {
  if (typeof seconds !== 'number') return '-';
  if (seconds < 120) return `${Math.round(seconds)}s`;
  return seconds < 7200 ? `${Math.round(seconds / 60)}m` : `${Math.round(seconds / 3600)}h`;
};
export const facts = (pairs: [string, unknown][]) => {
  const width = Math.max(...pairs.map(([key]) => key.length));
  return `${pairs.map(([key, value]) => `${`${key}:`.padEnd(width + 1)}  ${cell(value)}`).join('\n')}\n`;
};
export const indent = (text: string) => `${text.replace(/^/gm, '  ')}\n`;
