// Loaded into a benchmark's web and worker processes (`node --import tsx --import ./bench/support/memory-probe.ts …`):
// every BENCH_MEMORY_PROBE_MS (30 s) it writes the process's memory breakdown to stderr as one line,
// `BENCH_MEMORY {"rss":…,"heapTotal":…,"heapUsed":…,"external":…,"arrayBuffers":…}`, which the bench reads.
// Started with --expose-gc, it collects garbage first, so heapUsed is the live heap (a leak shows as a slope).
const every = Number(process.env.BENCH_MEMORY_PROBE_MS ?? 30_000);
const collect = (globalThis as { gc?: () => void }).gc;
if (every > 0) {
  const report = () => {
    collect?.();
    process.stderr.write(`BENCH_MEMORY ${JSON.stringify(process.memoryUsage())}\n`);
  };
  setInterval(report, every).unref();
  report();
}
