import type { PageContent } from './result.ts';

/**
 * The body as text: a byte-order mark wins (as in browsers), else the charset the Content-Type
 * header names, else (HTML) a `<meta charset>` in the first 1024 bytes, else UTF-8. An unknown
 * label falls back to the next source.
 */
export function decodeBody(body: Buffer, contentTypeHeader: string | null, sniffHtml: boolean): string {
  const bom = body[0] === 0xfe && body[1] === 0xff ? 'utf-16be' : body[0] === 0xff && body[1] === 0xfe ? 'utf-16le' : undefined;
  if (bom) return new TextDecoder(bom).decode(body);
  const declared = /;\s*charset\s*=\s*"?([\w.:-]+)/i.exec(contentTypeHeader ?? '')?.[1];
  const sniffed = sniffHtml ? /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(body.subarray(0, 1024).toString('latin1'))?.[1] : undefined;
  for (const label of [declared, sniffed]) {
    if (!label) continue;
    try {
      return new TextDecoder(label).decode(body);
    } catch {
      // Unknown label: try the next source.
    }
  }
  return new TextDecoder('utf-8').decode(body);
}

const MARKDOWN_LINK = /\[([^\]\n]{0,300})\]\((https?:\/\/[^\s)]+)\)/g;
const BARE_URL = /\bhttps?:\/\/[^\s<>()"'\]]+[^\s<>()"'\].,;:!?]/g;

/** Plain text and Markdown are read as they are: the title is a Markdown `# heading`, the links its links and bare URLs. */
export function readPlainText(text: string, markdown: boolean): PageContent {
  // Bounded capture, trimmed afterwards: a lazy `(.+?)\s*$` would be quadratic on a line of spaces.
  const heading = markdown
    ? /^#[ \t]+([^\n]{1,300})/m
        .exec(text)?.[1]
        ?.replace(/[\s#]+$/, '')
        .trim()
    : undefined;
  const links: { text: string; url: string }[] = [];
  if (markdown) for (const match of text.matchAll(MARKDOWN_LINK)) links.push({ text: match[1]!.trim(), url: match[2]! });
  for (const match of text.matchAll(BARE_URL)) links.push({ text: '', url: match[0] });
  return {
    title: heading || null,
    byline: null,
    site_name: null,
    language: null,
    published_at: null,
    excerpt: null,
    text: text.replace(/\r\n?/g, '\n').trim(),
    links,
  };
}
