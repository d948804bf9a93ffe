import { searchRecencies } from '../providers/search/index.ts';
import { singleLine, z } from '../core/zod.ts';

/** A URL a person or an agent can open: http or https only. */
const webUrl = z.url({ protocol: /^https?$/ });
const summary = z.string().openapi({ description: 'One line for the reader: what the result holds.' });

/** A host name (`example.com`, `docs.example.org`): no scheme, path or port. */
const hostName = z
  .string()
  .trim()
  .toLowerCase()
  .max(253)
  .regex(/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, 'must be a host name such as example.com (no scheme, path or port)');

export const searchInput = z.strictObject({
  query: singleLine(400).openapi({ description: 'What to search the web for.', example: 'how do foxes hunt in winter' }),
  limit: z.number().int().min(1).max(50).default(10).openapi({ description: 'Results wanted (each 10 are one billed page).' }),
  site: hostName.optional().openapi({ description: 'Only results on this host or its subdomains.', example: 'example.org' }),
  recency: z.enum(searchRecencies).optional().openapi({ description: 'Only results published within the last day, week, month or year.' }),
});

export const searchOutput = z.object({
  query: z.string(),
  results: z.array(
    z.object({
      title: z.string(),
      url: webUrl,
      snippet: z.string(),
      site_name: z.string().optional(),
      published_at: z.iso.datetime({ offset: true }).optional(),
    }),
  ),
  summary,
});

export const readUrlInput = z.strictObject({
  url: webUrl.max(2048).openapi({ description: 'The page to read (http or https; public internet addresses only).', example: 'https://example.org/article' }),
});

export const readUrlOutput = z.object({
  url: z.string().openapi({ description: 'The URL as asked for.' }),
  final_url: z.string().openapi({ description: 'Where the page was read from, after redirects.' }),
  content_type: z.string().openapi({ description: 'Media type of the page (text/html, application/pdf, text/plain, text/markdown).' }),
  title: z.string().nullable(),
  byline: z.string().nullable(),
  site_name: z.string().nullable(),
  language: z.string().nullable().openapi({ description: 'Language tag the page declares (e.g. `en`, `pt-BR`), or null.' }),
  published_at: z.iso.datetime({ offset: true }).nullable(),
  excerpt: z.string().nullable(),
  text: z.string().openapi({ description: 'The readable text (for HTML: the article, without navigation or footers), at most 100,000 characters.' }),
  word_count: z.number().int().min(0),
  links: z.array(z.object({ text: z.string(), url: webUrl })).openapi({ description: 'Absolute links, deduplicated, at most 200 (the article first).' }),
  truncated: z.boolean().openapi({ description: 'Whether `text` was cut at the character cap.' }),
  summary,
});
