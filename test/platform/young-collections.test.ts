import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { expect } from 'chai';
import { YoungCollections } from '../../src/platform/young-collections.ts';

describe('platform: young collections paced by streamed bytes', () => {
  it('collects once per `every` bytes streamed, counting from the last collection', () => {
    let collections = 0;
    const young = new YoungCollections(8, () => collections++);
    const seen: number[] = [];
    for (const bytes of [3, 3, 3, 1, 7, 8, 20, 0]) {
      young.streamedBytes(bytes);
      seen.push(collections);
    }
    // 3, 6, 9 → collect (0 left); 1, 8 → collect; 8 → collect; 20 → collect; 0 → nothing.
    expect(seen).to.deep.equal([0, 0, 1, 1, 2, 3, 4, 4]);
  });

  it('does nothing where the collection is not available', () => {
    const young = new YoungCollections(1, null);
    expect(() => young.streamedBytes(10)).not.to.throw();
  });

  it("runs V8's young-generation collection, with no command-line flag", async () => {
    const kinds: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries() as (PerformanceEntry & { detail?: { kind?: number } })[]) kinds.push(entry.detail?.kind ?? -1);
    });
    observer.observe({ entryTypes: ['gc'] });
    try {
      new YoungCollections(1024).streamedBytes(1024);
      // GC entries are delivered asynchronously.
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      observer.disconnect();
    }
    expect(kinds).to.include(constants.NODE_PERFORMANCE_GC_MINOR);
  });
});
