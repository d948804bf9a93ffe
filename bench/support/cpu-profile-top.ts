/**
 * Where a process's CPU went, from V8 `.cpuprofile` files (`node --cpu-prof`, e.g. bench:generations
 * --cpu-prof=1): self time by function and by file (node_modules packages as one), and the
 * inclusive time of functions, over every profile given (a directory: all its profiles, or
 * only those whose name contains --match=<text>). The idle and GC nodes are shown apart.
 * Each profile's busy time per second is printed first: pick --from/--to (seconds after its start)
 * to leave start-up out.
 * Run: npx tsx bench/support/cpu-profile-top.ts <dir or files…> [--top=30] [--match=text] [--from=s] [--to=s]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  startTime: number;
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const top = Number(flag('top') ?? 30);
const match = flag('match');
/** Only samples this many seconds after the profile began (skip start-up), and before --to. */
const from = Number(flag('from') ?? 0) * 1e6;
const to = Number(flag('to') ?? Number.POSITIVE_INFINITY) * 1e6;
const files = args
  .filter((a) => !a.startsWith('--'))
  .flatMap((a) => (statSync(a).isDirectory() ? readdirSync(a).map((f) => path.join(a, f)) : [a]))
  .filter((f) => f.endsWith('.cpuprofile') && (!match || path.basename(f).includes(match)));
if (!files.length) throw new Error('no .cpuprofile files given');

const short = (url: string) => {
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/');
    return `npm:${rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  const src = url.search(/\/(src|workers|bench)\//);
  return src >= 0 ? url.slice(src + 1) : url || '(native)';
};

const selfByFunction = new Map<string, number>();
const selfByFile = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  const timeline: number[] = [];
  let at = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    const name = byId.get(id)!.callFrame.functionName;
    if (name !== '(idle)' && name !== '(program)') timeline[Math.floor(at / 1e6)] = (timeline[Math.floor(at / 1e6)] ?? 0) + delta;
    if (at >= from && at < to) self.set(id, (self.get(id) ?? 0) + delta);
  });
  console.log(`${path.basename(file)}: busy ms per second from its start: ${Array.from(timeline, (us) => ((us ?? 0) / 1000).toFixed(0)).join(' ')}`);
  for (const [id, us] of self) {
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    if (name === '(idle)' || name === '(program)') continue;
    total += us;
    const key = `${name} ${short(url)}:${lineNumber + 1}`;
    selfByFunction.set(key, (selfByFunction.get(key) ?? 0) + us);
    selfByFile.set(short(url), (selfByFile.get(short(url)) ?? 0) + us);
    // Inclusive: each distinct function on the stack once.
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame;
      const k = `${f.functionName || '(anonymous)'} ${short(f.url)}:${f.lineNumber + 1}`;
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + us);
    }
  }
}
const print = (title: string, map: Map<string, number>, n = top) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n))
    console.log(`${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)} %  ${k}`);
};
console.log(`${files.length} profiles, ${(total / 1000).toFixed(0)} ms of CPU (idle and (program) left out)`);
print('self time by file (packages as one):', selfByFile);
print('self time by function:', selfByFunction);
print('inclusive time by function:', inclusive, top * 2);
