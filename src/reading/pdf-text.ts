// A PDF's text and metadata for readUrl, read inside an extraction thread (./pdf.ts starts it):
// its Flate streams are counted before pdf.js opens it, and whatever pdf.js does ends the thread
// at worst.
import { extractLinks, getDocumentProxy, getMeta } from 'unpdf';
import { checkPdfStreams } from '../core/contained/pdf-streams.ts';
import { FileRefusal } from '../core/contained/refusal.ts';
import { isoDate, languageTag, type PageContent } from './result.ts';

/** Pages read at most: text extraction is CPU bound, and the text cap is reached long before on real documents. */
const MAX_PDF_PAGES = 500;

/**
 * A PDF's text, page by page (pages separated by a blank line), stopping once `maxChars` is passed
 * or `MAX_PDF_PAGES` are read; title, author, language and date from its metadata when present.
 * Its Flate streams may inflate to `maxUncompressedBytes` in all. Whatever it throws, the caller
 * refuses the PDF: it is not a readable page.
 */
export async function readPdfText(data: Uint8Array, maxChars: number, maxUncompressedBytes: number): Promise<PageContent> {
  await checkPdfStreams(Buffer.from(data.buffer, data.byteOffset, data.byteLength), { maxUncompressedBytes });
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    pdf = await getDocumentProxy(data, { isEvalSupported: false, stopAtErrors: false });
  } catch (error) {
    throw new FileRefusal(`the PDF could not be read: ${(error as Error).message}`, null);
  }
  try {
    const pages: string[] = [];
    let length = 0;
    for (let number = 1; number <= Math.min(pdf.numPages, MAX_PDF_PAGES) && length <= maxChars; number++) {
      const page = await pdf.getPage(number);
      const content = await page.getTextContent();
      const text = content.items
        .map((item) => ('str' in item ? `${item.str}${item.hasEOL ? '\n' : ''}` : ''))
        .join('')
        .replace(/[ \t]+/g, ' ')
        .replace(/ *\n */g, '\n')
        .trim();
      if (text) pages.push(text);
      length += text.length;
    }
    const { info } = await getMeta(pdf).catch(() => ({ info: {} as Record<string, unknown> }));
    const { links } = await extractLinks(pdf).catch(() => ({ links: [] as string[] }));
    const field = (name: string) => (typeof info[name] === 'string' && (info[name] as string).trim()) || null;
    return {
      title: field('Title'),
      byline: field('Author'),
      site_name: null,
      // pdf.js reports the catalog's /Lang as `Language`.
      language: languageTag(field('Language')),
      published_at: isoDate(pdfDate(field('CreationDate'))),
      excerpt: field('Subject'),
      text: pages.join('\n\n'),
      links: links.map((url) => ({ text: '', url })),
    };
  } catch (error) {
    throw new FileRefusal(`the PDF could not be read: ${(error as Error).message}`, null);
  } finally {
    await pdf.destroy();
  }
}

/** `D:20240131120000+01'00'` (PDF date) → `2024-01-31T12:00:00+01:00`; null when it is not one. */
function pdfDate(value: string | null): string | null {
  const match = value && /^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(Z|[+-]\d{2}'?\d{2}'?)?/.exec(value);
  if (!match) return null;
  const [, year, month = '01', day = '01', hour = '00', minute = '00', second = '00', zone] = match;
  const offset = !zone || zone === 'Z' ? 'Z' : `${zone.slice(0, 3)}:${zone.replace(/'/g, '').slice(3, 5) || '00'}`;
  return `${year}-${month}-${day}T${hour}:${minute}:${second}${offset}`;
}
