/** What a reader (HTML, PDF, text) makes of a body, before the common caps. */
export interface PageContent {
  title: string | null;
  byline: string | null;
  site_name: string | null;
  /** BCP 47 tag as the page declares it (`en`, `pt-BR`), or null. */
  language: string | null;
  /** ISO 8601, or null. */
  published_at: string | null;
  excerpt: string | null;
  text: string;
  /** Absolute or relative to the page; made absolute, deduplicated and capped here. */
  links: { text: string; url: string }[];
}

export interface ReadUrlResult extends PageContent {
  url: string;
  final_url: string;
  content_type: string;
  /** Words in `text` (as returned, so after truncation). */
  word_count: number;
  /** Whether `text` was cut at the character cap. */
  truncated: boolean;
  summary: string;
}

/** Most characters of text returned; the rest is cut (`truncated: true`). */
export const READ_MAX_TEXT_CHARS = 100_000;
export const READ_MAX_LINKS = 200;
const EXCERPT_CHARS = 280;

export function composeResult(
  page: { url: string; final_url: string; content_type: string },
  content: PageContent,
  maxTextChars = READ_MAX_TEXT_CHARS,
): ReadUrlResult {
  const truncated = content.text.length > maxTextChars;
  const text = (truncated ? cutAtWord(content.text, maxTextChars) : content.text).trimEnd();
  const word_count = text.match(/\S+/g)?.length ?? 0;
  const title = clean(content.title);
  const excerpt = clean(content.excerpt) ?? (text ? shorten(text.replace(/\s+/g, ' '), EXCERPT_CHARS) : null);
  const host = safeHost(page.final_url);
  const summary = `${title ? `"${shorten(title, 120)}"` : 'Untitled page'} from ${host}: ${word_count.toLocaleString('en-US')} words${truncated ? ' (text truncated)' : ''}`;
  return {
    url: page.url,
    final_url: page.final_url,
    content_type: page.content_type,
    title,
    byline: clean(content.byline),
    site_name: clean(content.site_name),
    language: content.language,
    published_at: content.published_at,
    excerpt,
    text,
    word_count,
    links: absoluteLinks(content.links, page.final_url),
    truncated,
    summary,
  };
}

/** http(s) links only, made absolute against the page, without fragments, first occurrence kept, at most READ_MAX_LINKS. */
export function absoluteLinks(links: { text: string; url: string }[], base: string): { text: string; url: string }[] {
  const seen = new Map<string, { text: string; url: string }>();
  for (const link of links) {
    let url: URL;
    try {
      url = new URL(link.url.trim(), base);
    } catch {
      continue;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') continue;
    url.hash = '';
    const text = shorten(link.text.replace(/\s+/g, ' ').trim(), 300);
    const known = seen.get(url.href);
    if (known) {
      if (!known.text && text) known.text = text;
      continue;
    }
    if (seen.size >= READ_MAX_LINKS) break;
    seen.set(url.href, { text, url: url.href });
  }
  return [...seen.values()];
}

const LANGUAGE_TAG = /^[a-z]{2,3}(-[a-z0-9]{1,8})*$/i;

/** A BCP 47-looking language tag (`en_US` → `en-US`), or null for anything else. */
export function languageTag(value: string | null | undefined): string | null {
  const tag = value?.trim().replace(/_/g, '-');
  return tag && tag.length <= 35 && LANGUAGE_TAG.test(tag) ? tag : null;
}

/** ISO 8601 from any date string Date.parse understands, else null. */
export function isoDate(value: string | null | undefined): string | null {
  if (!value) return null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : new Date(at).toISOString();
}

/**
 * The first `max` characters, ending at a word boundary when one is near (a scan, not a regex: a
 * long run of spaces would make a backtracking pattern quadratic), never inside a surrogate pair.
 */
function cutAtWord(text: string, max: number): string {
  let end = max;
  while (end > max - 200 && end > 0 && !/\s/.test(text[end]!)) end--;
  if (end <= max - 200 || end === 0) end = max;
  const code = text.charCodeAt(end - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? end - 1 : end);
}

function clean(value: string | null | undefined): string | null {
  const trimmed = value?.replace(/\s+/g, ' ').trim();
  return trimmed ? trimmed : null;
}

function shorten(value: string, max: number): string {
  return value.length <= max ? value : `${value.slice(0, max - 1).trimEnd()}…`;
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
