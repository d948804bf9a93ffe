import { readFile } from 'node:fs/promises';

/** Objects of a V8 heap snapshot grouped by constructor (node name for objects, type otherwise): count and self size. */
export async function heapByConstructor(file: string): Promise<Map<string, { count: number; bytes: number }>> {
  const snapshot = JSON.parse(await readFile(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
  const groups = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < snapshot.nodes.length; i += fields.length) {
    const type = types[snapshot.nodes[i + typeAt]!]!;
    const key = type === 'object' || type === 'closure' ? `${snapshot.strings[snapshot.nodes[i + nameAt]!]} (${type})` : `(${type})`;
    const group = groups.get(key) ?? { count: 0, bytes: 0 };
    group.count += 1;
    group.bytes += snapshot.nodes[i + sizeAt]!;
    groups.set(key, group);
  }
  return groups;
}

/** What grew from one snapshot to the next, the most bytes first, as printable lines. */
export function heapGrowth(before: Map<string, { count: number; bytes: number }>, after: Map<string, { count: number; bytes: number }>, limit = 15): string[] {
  return [...after]
    .map(([key, a]) => {
      const b = before.get(key) ?? { count: 0, bytes: 0 };
      return { key, count: a.count - b.count, bytes: a.bytes - b.bytes, total: a.bytes };
    })
    .filter((g) => g.bytes > 0)
    .sort((x, y) => y.bytes - x.bytes)
    .slice(0, limit)
    .map(
      (g) =>
        `${`+${(g.bytes / 1048576).toFixed(2)} MiB`.padStart(12)} ${`+${g.count}`.padStart(9)} objects  ${g.key} (now ${(g.total / 1048576).toFixed(2)} MiB)`,
    );
}
