/**
 * Enrichment's heavy stages on one worker, without the queue: what the handler does with the
 * bytes (src/assets/handlers.ts) once they are read.
 *  - a 12-megapixel JPEG (4000×3000, camera-like noise): sha256, header probe with the pixel limit,
 *    the 256 and 1024 px WebP thumbnails, both stored on local disk — p50 over BENCH_IMAGE_RUNS;
 *  - a 100-page PDF (BENCH_PDF_PAGES, 40 lines a page): page count and text, in an extraction thread
 *    of its own under the default ceilings, as the handler runs it — p50 over BENCH_PDF_RUNS.
 * Baseline in the same run, interleaved with the image runs: sharp decoding the same JPEG to raw
 * pixels alone (the least any thumbnailer must do without shrink-on-load). The ratio is
 * enrichment p50 / decode p50. Goal (issue 22): 12 MP JPEG enrichment p50 ≤ 1.5 s.
 * Run: npm run bench:enrichment   (flags: --image-runs=9 --pdf-runs=9 --pdf-pages=100)
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { extractContained } from '../src/assets/extraction/contained.ts';
import type { ExtractionLimits } from '../src/assets/extraction/limits.ts';
import { probeImage, renderThumbnails } from '../src/assets/extractors.ts';
import { assetThumbnailKey } from '../src/assets/presenter.ts';
import { LocalDiskStorage } from '../src/providers/storage/local.ts';
import { pdf } from '../test/assets/fixtures.ts';
import { ascending, int, loads, percentile, readFlags } from './support/bench.ts';

readFlags();
const IMAGE_RUNS = Math.max(1, int('IMAGE_RUNS', 9));
const PDF_RUNS = Math.max(1, int('PDF_RUNS', 9));
const PDF_PAGES = Math.max(1, int('PDF_PAGES', 100));
const MAX_PIXELS = 100_000_000;
const GOAL_MS = 1500;
// The defaults of ASSET_EXTRACTION_* and ASSET_PDF_MAX_PAGES.
const LIMITS: ExtractionLimits = {
  maxUncompressedBytes: 100 * 1024 * 1024,
  maxEntries: 10_000,
  maxPdfPages: 2_000,
  cpuMs: 30_000,
  wallMs: 120_000,
  memoryMb: 192,
};
const readPdf = (bytes: Buffer) => extractContained('pdf', bytes, 'application/pdf', LIMITS, new AbortController().signal);

const time = async (work: () => Promise<unknown>) => {
  const started = performance.now();
  await work();
  return performance.now() - started;
};
const p50 = (values: number[]) => percentile(ascending(values), 50);
const ms = (value: number) => `${value.toFixed(0)} ms`;

const root = await mkdtemp(path.join(tmpdir(), 'bench-enrichment-'));
try {
  const storage = new LocalDiskStorage(root);
  const jpeg = await sharp({
    create: { width: 4000, height: 3000, channels: 3, background: { r: 120, g: 140, b: 90 }, noise: { type: 'gaussian', mean: 128, sigma: 30 } },
  })
    .jpeg({ quality: 85 })
    .toBuffer();
  console.log(`12 MP JPEG: ${(jpeg.length / 1024 / 1024).toFixed(1)} MiB; ${IMAGE_RUNS} runs each, interleaved; load ${loads()}`);

  const enrich = async () => {
    createHash('sha256').update(jpeg).digest('hex');
    await probeImage(jpeg, MAX_PIXELS);
    for (const { thumbnail, body } of await renderThumbnails(jpeg, MAX_PIXELS))
      await storage.put(assetThumbnailKey('bench', 'photo', thumbnail.size), body, 'image/webp');
  };
  const decode = () => sharp(jpeg).raw().toBuffer();
  // One of each first, unmeasured: libvips and the disk warm up.
  await decode();
  await enrich();
  const decodes: number[] = [];
  const enrichments: number[] = [];
  for (let i = 0; i < IMAGE_RUNS; i++) {
    decodes.push(await time(decode));
    enrichments.push(await time(enrich));
  }
  const image = p50(enrichments);
  const baseline = p50(decodes);
  console.log(`  baseline  sharp decode to raw pixels   p50 ${ms(baseline)}`);
  console.log(
    `  enrichment (hash, probe, 2 thumbnails) p50 ${ms(image)}   ratio ${(image / baseline).toFixed(2)}× baseline   goal p50 ≤ ${ms(GOAL_MS)}: ${image <= GOAL_MS ? 'met' : 'MISSED'}`,
  );

  const lines = Array.from({ length: 40 }, (_, i) => `Line ${i + 1} of the quarterly report: revenue, costs, lighthouse maintenance and harbour fees.`);
  const document = pdf(Array.from({ length: PDF_PAGES }, (_, page) => lines.map((line) => `Page ${page + 1}. ${line}`).join('\n')));
  const first = await readPdf(document);
  console.log(
    `${PDF_PAGES}-page PDF: ${(document.length / 1024).toFixed(0)} KiB, ${first.facts.page_count} pages, ${first.facts.text_length} characters of text; ${PDF_RUNS} runs; load ${loads()}`,
  );
  const extractions: number[] = [];
  for (let i = 0; i < PDF_RUNS; i++) extractions.push(await time(() => readPdf(document)));
  const text = p50(extractions);
  console.log(`  text extraction p50 ${ms(text)}   (${(text / PDF_PAGES).toFixed(1)} ms a page; ${(text / baseline).toFixed(2)}× the JPEG decode baseline)`);
} finally {
  await rm(root, { recursive: true, force: true });
}
