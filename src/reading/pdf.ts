import { extractLinks, getDocumentProxy, getMeta } from 'unpdf';
import { ReadFailure } from '../core/read-failure.ts';
import { isoDate, languageTag, type PageContent } from './result.ts';

/** Pages read at most: text extraction is CPU bound, and the text cap is reached long before on real documents. */
const MAX_PDF_PAGES = 500;

/**
 * A PDF's text, page by page (pages separated by a blank line), stopping once `maxChars` is passed
 * or `MAX_PDF_PAGES` are read; title, author, language and date from its metadata when present.
 * A PDF that cannot be parsed (broken, encrypted) is refused: it is not a readable page.
 */
export async function readPdf(body: Buffer, signal: AbortSignal, maxChars: number): Promise<PageContent> {
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    pdf = await getDocumentProxy(new Uint8Array(body), { isEvalSupported: false, stopAtErrors: false });
  } catch (error) {
    throw new ReadFailure('refused', `the PDF could not be read: ${(error as Error).message}`, { cause: error });
  }
  try {
    const pages: string[] = [];
    let length = 0;
    for (let number = 1; number <= Math.min(pdf.numPages, MAX_PDF_PAGES) && length <= maxChars; number++) {
      signal.throwIfAborted();
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
    if (signal.aborted) throw signal.reason;
    throw new ReadFailure('refused', `the PDF could not be read: ${(error as Error).message}`, { cause: error });
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
