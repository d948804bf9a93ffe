/**
 * The rules `promtool check metrics` applies (Prometheus' promlint), for machines without promtool:
 * the text exposition parses (HELP and TYPE once per family, before its samples; names and labels
 * well formed), and every family passes the lint: help text, counters end in `_total` and nothing
 * else does, snake_case, base units (seconds, bytes), promlint's unit abbreviations refused, no type in the name,
 * no reserved `:` in names or `le`/`quantile` labels on the wrong type, no duplicate series.
 */
const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface Family {
  name: string;
  help?: string;
  type?: string;
  samples: { name: string; labels: Record<string, string> }[];
}

function parseLabels(text: string, problems: string[], line: string): Record<string, string> | undefined {
  const labels: Record<string, string> = {};
  const pattern = /\s*([^=,\s]+)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)/y;
  let at = 0;
  while (at < text.length) {
    pattern.lastIndex = at;
    const match = pattern.exec(text);
    if (!match) {
      problems.push(`unparsable labels: ${line}`);
      return undefined;
    }
    const [, name, value] = match;
    if (!LABEL.test(name!) || name!.startsWith('__')) problems.push(`invalid label name "${name}": ${line}`);
    if (name! in labels) problems.push(`duplicate label "${name}": ${line}`);
    labels[name!] = value!;
    at = pattern.lastIndex;
  }
  return labels;
}

const baseName = (family: Family, sample: string) => {
  if (family.type === 'histogram') return sample.replace(/_(bucket|sum|count)$/, '');
  if (family.type === 'summary') return sample.replace(/_(sum|count)$/, '');
  return sample;
};

export function promlint(text: string): string[] {
  const problems: string[] = [];
  const families = new Map<string, Family>();
  let current: Family | undefined;
  const family = (name: string) => {
    let found = families.get(name);
    if (!found) {
      found = { name, samples: [] };
      families.set(name, found);
    }
    return found;
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const meta = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
    if (meta) {
      const [, kind, name, rest = ''] = meta;
      if (!NAME.test(name!)) problems.push(`invalid metric name "${name}"`);
      const target = family(name!);
      if (target.samples.length > 0) problems.push(`${kind} for ${name} after its samples`);
      if (kind === 'HELP') {
        if (target.help !== undefined) problems.push(`second HELP for ${name}`);
        target.help = rest;
      } else {
        if (target.type !== undefined) problems.push(`second TYPE for ${name}`);
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) problems.push(`unknown type "${rest}" for ${name}`);
        target.type = rest;
      }
      current = target;
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = /^([^\s{]+)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$/.exec(line);
    if (!sample) {
      problems.push(`unparsable line: ${line}`);
      continue;
    }
    const [, name, labelText = '', value] = sample;
    if (!NAME.test(name!)) problems.push(`invalid metric name "${name}"`);
    if (!/^(?:[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)|NaN|[-+]?Inf)$/.test(value!)) problems.push(`invalid value "${value}": ${line}`);
    const labels = parseLabels(labelText, problems, line) ?? {};
    const owner = current && baseName(current, name!) === current.name ? current : family(name!);
    if (owner !== current && families.get(name!)?.samples.length) problems.push(`samples of ${name} are not grouped together`);
    owner.samples.push({ name: name!, labels });
    current = owner;
  }

  for (const f of families.values()) {
    const type = f.type ?? 'untyped';
    if (!f.help) problems.push(`${f.name}: no help text`);
    if (type === 'counter' && !f.name.endsWith('_total')) problems.push(`${f.name}: counter metrics should have "_total" suffix`);
    if (type !== 'counter' && f.name.endsWith('_total')) problems.push(`${f.name}: non-counter metrics should not have "_total" suffix`);
    if (/[A-Z]/.test(f.name.replace(/^[^_]*:/, ''))) problems.push(`${f.name}: metric names should be written in 'snake_case' not 'camelCase'`);
    if (f.name.includes(':')) problems.push(`${f.name}: metric names should not contain ':'`);
    // promlint's units: a non-base unit, or a prefixed base unit, names its base unit; abbreviations are refused.
    const parts = f.name.split('_');
    for (const part of parts) {
      const nonBase: Record<string, string> = {
        minutes: 'seconds',
        hours: 'seconds',
        days: 'seconds',
        weeks: 'seconds',
        bits: 'bytes',
        kelvins: 'kelvin',
        fahrenheit: 'celsius',
      };
      if (nonBase[part]) problems.push(`${f.name}: use base unit "${nonBase[part]}" instead of "${part}"`);
      for (const prefix of ['pico', 'nano', 'micro', 'milli', 'centi', 'deci', 'kilo', 'kibi', 'mega', 'mibi', 'giga', 'gibi', 'tera', 'tebi'])
        for (const base of ['seconds', 'bytes', 'meters', 'grams', 'volts', 'amperes', 'joules'])
          if (part === `${prefix}${base}`) problems.push(`${f.name}: use base unit "${base}" instead of "${part}"`);
      if (['s', 'ms', 'us', 'ns', 'sec', 'b', 'kb', 'mb', 'gb', 'tb', 'pb', 'm', 'h', 'd'].includes(part))
        problems.push(`${f.name}: metric names should not contain abbreviated units ("${part}")`);
    }
    for (const typeWord of ['counter', 'gauge', 'histogram', 'summary'])
      if (new RegExp(`(^|_)${typeWord}(_|$)`).test(f.name)) problems.push(`${f.name}: metric name should not include type '${typeWord}'`);
    const seen = new Set<string>();
    for (const sample of f.samples) {
      if (type !== 'histogram' && 'le' in sample.labels) problems.push(`${f.name}: non-histogram metrics should not have "le" label`);
      if (type !== 'summary' && 'quantile' in sample.labels) problems.push(`${f.name}: non-summary metrics should not have "quantile" label`);
      const key = `${sample.name}{${Object.entries(sample.labels)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k}="${v}"`)
        .join(',')}}`;
      if (seen.has(key)) problems.push(`${f.name}: duplicate series ${key}`);
      seen.add(key);
    }
  }
  return problems;
}
