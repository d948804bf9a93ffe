import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { blockText, type DomDocument, type DomElement } from './dom.ts';
import { isoDate, languageTag, type PageContent } from './result.ts';

/** Readability gives up on documents with more elements than this (CPU bound on a 5 MiB page). */
const MAX_ELEMENTS = 50_000;

/**
 * An HTML page as text: metadata and links are read from the page first (Readability rewrites the
 * document), then Readability picks the article, which drops navigation, sidebars and footers. When
 * it finds no article, the body's text is used. Links: the article's first, then the rest of the page's.
 */
export function readHtml(html: string, pageUrl: string): PageContent {
  const { document } = parseHTML(html) as unknown as { document: DomDocument };
  const base = baseUrl(document, pageUrl);
  const meta = (selector: string) => document.querySelector(selector)?.getAttribute('content')?.trim() || null;
  const pageLinks = linksIn(document.body, base);
  const pageTitle = document.querySelector('title')?.textContent ?? null;
  const language = languageOf(document, meta);
  const published = meta('meta[property="article:published_time"]') ?? meta('meta[name="date"]') ?? meta('meta[itemprop="datePublished"]');

  let article: ReturnType<Readability<DomElement>['parse']> = null;
  try {
    // The serializer hands back the article element itself, so it is walked once, not re-parsed.
    article = new Readability<DomElement>(document as never, { serializer: (node) => node as unknown as DomElement, maxElemsToParse: MAX_ELEMENTS }).parse();
  } catch {
    // Too many elements, or a page Readability cannot take apart: fall back to the whole body.
  }
  const articleRoot = article?.content ?? null;
  const text = articleRoot ? blockText(articleRoot) : document.body ? blockText(document.body) : '';
  return {
    title: article?.title || pageTitle,
    byline: article?.byline ?? meta('meta[name="author"]'),
    site_name: article?.siteName ?? meta('meta[property="og:site_name"]'),
    language,
    published_at: isoDate(article?.publishedTime) ?? isoDate(published),
    excerpt: article?.excerpt ?? meta('meta[name="description"]'),
    text,
    links: articleRoot ? [...linksIn(articleRoot, base), ...pageLinks] : pageLinks,
  };
}

/** `<base href>` when the page sets one (relative links resolve against it), else the page's own URL. */
function baseUrl(document: DomDocument, pageUrl: string): string {
  const href = document.querySelector('base[href]')?.getAttribute('href');
  if (!href) return pageUrl;
  try {
    return new URL(href, pageUrl).href;
  } catch {
    return pageUrl;
  }
}

/** `<html lang>`, else `Content-Language` in a meta tag, else `og:locale` (`en_US` → `en-US`); null if none is a valid tag. */
function languageOf(document: DomDocument, meta: (selector: string) => string | null): string | null {
  const candidates = [
    document.documentElement?.getAttribute('lang'),
    document.documentElement?.getAttribute('xml:lang'),
    meta('meta[http-equiv="content-language" i]')?.split(',')[0],
    meta('meta[property="og:locale"]'),
  ];
  for (const candidate of candidates) {
    const tag = languageTag(candidate);
    if (tag) return tag;
  }
  return null;
}

function linksIn(root: DomElement | null, base: string): { text: string; url: string }[] {
  if (!root) return [];
  const anchors = Array.from(root.querySelectorAll('a[href]'));
  return anchors.flatMap((anchor) => {
    const href = anchor.getAttribute('href');
    if (!href) return [];
    try {
      return [{ text: anchor.textContent ?? '', url: new URL(href, base).href }];
    } catch {
      return [];
    }
  });
}
