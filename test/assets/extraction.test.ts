import { expect } from 'chai';
import { UnreadableAssetError } from '../../src/assets/enrichment.ts';
import { extractContained } from '../../src/assets/extraction/contained.ts';
import type { ExtractionLimits } from '../../src/assets/extraction/limits.ts';
import { checkDeclaredSizes } from '../../src/assets/extraction/media-sizes.ts';
import { checkPdfStreams } from '../../src/core/contained/pdf-streams.ts';
import { FileRefusal } from '../../src/core/contained/refusal.ts';
import { checkZip } from '../../src/assets/extraction/zip.ts';
import { docxBomb, docxLyingBomb, docxOfManyEntries, inflatingTo, mp4Truncated, pdfInflating, wavClaiming4GB, zipOf } from '../support/hostile-files.ts';
import { docx, pdf, wav } from './fixtures.ts';

const LIMITS: ExtractionLimits = {
  maxUncompressedBytes: 100 * 1024 * 1024,
  maxEntries: 10_000,
  maxPdfPages: 2_000,
  cpuMs: 60_000,
  wallMs: 240_000,
  memoryMb: 192,
};
const MiB = 1024 * 1024;

/** The refusal `work` ends with: its code and message. */
async function refusal(work: () => Promise<unknown> | unknown): Promise<{ code: string; message: string }> {
  try {
    await work();
  } catch (error) {
    expect(error instanceof UnreadableAssetError || error instanceof FileRefusal, String(error)).to.equal(true);
    return { code: (error as UnreadableAssetError).code, message: (error as Error).message };
  }
  throw new Error('expected a refusal, the work succeeded');
}

const contained = (stage: 'pdf' | 'docx' | 'media', bytes: Buffer, limits: Partial<ExtractionLimits> = {}, signal = new AbortController().signal) =>
  extractContained(stage, bytes, stage === 'media' ? 'audio/wav' : '', { ...LIMITS, ...limits }, signal);

/** The limits of opening a file, checked before any parser runs, and the ceilings of the thread it is opened in. */
describe('extraction limits (zip, PDF and media checks; the extraction thread’s ceilings)', function () {
  this.timeout(120_000);

  describe('zip-based documents: entries and bytes actually inflated, before parsing', () => {
    it('refuses a bomb by ratio, one whose headers lie about its sizes, and one of too many entries; passes an ordinary DOCX', async () => {
      expect(await refusal(() => checkZip(docxBomb(), LIMITS))).to.deep.include({ code: 'too_large_uncompressed' });
      // Its headers declare a 200-byte document (here its central directory record's): only the counted inflation finds the 300 MiB.
      const lying = docxLyingBomb();
      expect(lying.readUInt32LE(lying.lastIndexOf('word/document.xml') - 46 + 24)).to.equal(200);
      expect(await refusal(() => checkZip(lying, LIMITS))).to.deep.include({ code: 'too_large_uncompressed' });
      expect(await refusal(() => checkZip(docxOfManyEntries(20_000), LIMITS))).to.deep.equal({
        code: 'too_many_entries',
        message: 'the archive has more than the 10000 entries allowed; it was not opened',
      });
      await checkZip(docx(['an ordinary memo']), LIMITS);
    });

    it('counts exactly: an archive inflating to the limit passes, one byte more is refused; declared sizes over the limit are refused without inflating', async () => {
      const limits = { ...LIMITS, maxUncompressedBytes: 4 * MiB };
      const exact = zipOf([
        { name: 'a.xml', data: Buffer.alloc(3 * MiB, 'x'), deflate: true },
        { name: 'b.xml', data: Buffer.alloc(MiB, 'y') },
      ]);
      await checkZip(exact, limits);
      const over = zipOf([
        { name: 'a.xml', data: Buffer.alloc(3 * MiB, 'x'), deflate: true },
        { name: 'b.xml', data: Buffer.alloc(MiB + 1, 'y') },
      ]);
      expect(await refusal(() => checkZip(over, limits))).to.deep.include({ code: 'too_large_uncompressed' });
      const claims = zipOf([{ name: 'a.xml', data: Buffer.from('tiny'), declaredSize: 5 * MiB }]);
      expect((await refusal(() => checkZip(claims, limits))).message).to.match(/its entries declare 5242880 bytes/);
      expect(await refusal(() => checkZip(Buffer.from('not a zip at all'), limits))).to.deep.include({ code: 'unreadable' });
    });
  });

  it('PDF: Flate streams counted as they inflate (not by their /Length); an ordinary PDF passes', async () => {
    expect(await refusal(() => checkPdfStreams(pdfInflating(), LIMITS))).to.deep.include({ code: 'too_large_uncompressed' });
    await checkPdfStreams(pdf(['an ordinary page']), LIMITS);
    await checkPdfStreams(pdfInflating(2 * MiB), LIMITS);
  });

  it('media: headers claiming far more than the file holds are refused; a real WAV passes', () => {
    expect(() => checkDeclaredSizes(wavClaiming4GB())).to.throw(UnreadableAssetError, /RIFF file claims 4294967296 bytes but the file has 108/);
    checkDeclaredSizes(wav(1));
    // A stream being written says "unknown" (all ones): not a lie.
    const streaming = wav(1);
    streaming.writeUInt32LE(0xffffffff, 4);
    streaming.writeUInt32LE(0xffffffff, 40);
    checkDeclaredSizes(streaming);
    // MP4: a moov of 4 GB in 104 bytes is refused; boxes that fit, then trailing bytes that are no box, pass.
    expect(() => checkDeclaredSizes(mp4Truncated())).to.throw(UnreadableAssetError, /the MP4 box 'moov' claims 4294967304 bytes but the file has 104/);
    const sized = (type: string, body: Buffer) => {
      const bytes = Buffer.concat([Buffer.alloc(4), Buffer.from(type, 'latin1'), body]);
      bytes.writeUInt32BE(bytes.length, 0);
      return bytes;
    };
    checkDeclaredSizes(
      Buffer.concat([
        sized('ftyp', Buffer.from('isom\0\0\0\0isom')),
        sized('moov', Buffer.alloc(100)),
        sized('mdat', Buffer.alloc(1000)),
        Buffer.from([0xff, 0xfe, 0x01, 0x02, 0, 0, 0, 1]),
      ]),
    );
  });

  describe('the extraction thread', () => {
    it('ends an extraction past its memory ceiling as extraction_out_of_memory; the next extraction in this process succeeds', async () => {
      // The stream check off (a limit of 1 TiB): pdf.js inflates the 150 MB itself, and the ceiling ends it.
      expect(await refusal(() => contained('pdf', pdfInflating(), { maxUncompressedBytes: 2 ** 40, memoryMb: 96 }))).to.deep.equal({
        code: 'extraction_out_of_memory',
        message: 'opening the file needed more than 96 MB; the extraction was stopped',
      });
      const result = await contained('pdf', pdf(['after the bomb']));
      expect(result).to.deep.equal({ facts: { page_count: 1, text_length: 14 }, text: 'after the bomb' });
    });

    it('ends an extraction past its CPU time, or its wall-clock time, as extraction_timeout', async () => {
      // 24 MB of content-stream operators: far more CPU than a tenth of a second.
      const slow = pdfInflating(24 * MiB);
      expect(await refusal(() => contained('pdf', slow, { cpuMs: 100, memoryMb: 1024 }))).to.deep.equal({
        code: 'extraction_timeout',
        message: 'opening the file took more than 0.1 s of CPU time; the extraction was stopped',
      });
      expect(await refusal(() => contained('pdf', slow, { wallMs: 100, memoryMb: 1024 }))).to.deep.equal({
        code: 'extraction_timeout',
        message: 'opening the file took more than 0.1 s; the extraction was stopped',
      });
      expect((await contained('docx', docx(['still fine']))).text).to.equal('still fine');
    });

    it('refusals from inside the thread keep their reason; an abort (cancel, shutdown) ends the thread with the abort’s reason', async () => {
      expect(await refusal(() => contained('docx', docxBomb()))).to.deep.include({ code: 'too_large_uncompressed' });
      expect(await refusal(() => contained('docx', Buffer.from('PK but not really')))).to.deep.include({ code: 'unreadable' });
      expect((await contained('media', wav(1.5))).facts).to.deep.include({ duration_seconds: 1.5, container: 'WAVE' });

      const controller = new AbortController();
      const running = contained('pdf', pdfInflating(24 * MiB), { maxUncompressedBytes: 2 ** 40, memoryMb: 1024 }, controller.signal);
      setTimeout(() => controller.abort(new Error('the job was canceled')), 50);
      const error = await running.then(
        () => null,
        (e: Error) => e,
      );
      expect(error?.message).to.equal('the job was canceled');
    });
  });

  it('inflatingTo makes what it says, cheaply', async () => {
    const { inflateRawSync } = await import('node:zlib');
    expect(inflateRawSync(inflatingTo(3 * MiB, { head: '<', tail: '>' })).length).to.equal(3 * MiB + 2);
  });
});
