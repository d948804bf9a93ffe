import { expect } from 'chai';
import type { Config } from '../../src/config/schema.ts';
import { isReadFailure, type ReadFailureKind } from '../../src/core/read-failure.ts';
import { READ_MAX_BYTES, readUrl } from '../../src/reading/index.ts';
import { readUrlOutput } from '../../src/search/index.ts';
import { testConfig } from '../support/config.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';
import { pdfInflating } from '../support/hostile-files.ts';

/** A one-page PDF with one line of text and an Info dictionary, xref offsets computed as it is written. */
function tinyPdf(line: string, title: string): Buffer {
  const content = `BT /F1 18 Tf 72 720 Td (${line}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R /Lang (en-US) >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    `<< /Title (${title}) /Author (Ada Lovelace) /CreationDate (D:20240131120000Z) >>`,
  ];
  let pdf = '%PDF-1.4\n';
  const offsets = objects.map((body, index) => {
    const offset = pdf.length;
    pdf += `${index + 1} 0 obj\n${body}\nendobj\n`;
    return offset;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

const paragraph = (n: number) =>
  `<p>Paragraph ${n}: foxes are small omnivorous mammals found on every continent but Antarctica. They hunt alone, mostly at dusk, and this sentence makes the paragraph long enough to count as content.</p>`;
const article = `<!doctype html>
<html lang="en-GB"><head>
  <meta charset="utf-8"><title>How foxes hunt in winter | Wild Pages</title>
  <meta name="author" content="Jane Doe"><meta property="og:site_name" content="Wild Pages">
  <meta property="article:published_time" content="2024-03-01T10:00:00+01:00">
</head><body>
  <nav class="menu"><a href="/">Home</a> <a href="/about">About us</a> <span>NAVIGATION BOILERPLATE</span></nav>
  <main><article>
    <h1>How foxes hunt in winter</h1>
    ${[1, 2, 3, 4, 5, 6].map(paragraph).join('\n')}
    <p>Read <a href="../more/foxes#top">more about foxes</a>, <a href="https://other.example/badgers">badgers</a> and <a href="/more/foxes">foxes again</a>.</p>
  </article></main>
  <footer class="site-footer">FOOTER BOILERPLATE <a href="/privacy">Privacy</a> <a href="mailto:x@example.org">Mail</a></footer>
</body></html>`;

describe('reading: readUrl (SSRF-safe page reader)', () => {
  let upstream: FakeUpstream;
  let other: FakeUpstream;
  let config: Config;
  const read = (path: string, overrides: Partial<Config> = {}, maxTextChars?: number) =>
    readUrl(path.startsWith('http') ? path : `${upstream.url}${path}`, {
      config: { ...config, ...overrides },
      signal: new AbortController().signal,
      ...(maxTextChars && { maxTextChars }),
    });
  const failure = async (promise: Promise<unknown>, kind: ReadFailureKind, message: RegExp) => {
    const error = await promise.then(
      () => expect.fail('expected a ReadFailure'),
      (caught: unknown) => caught,
    );
    expect(isReadFailure(error), String(error)).to.equal(true);
    expect((error as Error & { kind: string }).kind).to.equal(kind);
    expect((error as Error).message).to.match(message);
  };

  before(async () => {
    other = await startUpstream({ '/secret': (_req, res) => res.end('internal') });
    const send = (type: string, body: string | Buffer) => (_req: unknown, res: import('node:http').ServerResponse) => {
      res.writeHead(200, { 'content-type': type });
      res.end(body);
    };
    upstream = await startUpstream({
      '/articles/foxes': send('text/html; charset=utf-8', article),
      '/paper.pdf': send('application/pdf', tinyPdf('Hello from a tiny PDF', 'A Tiny Paper')),
      '/bomb.pdf': send('application/pdf', pdfInflating()),
      '/notes.txt': send('text/plain; charset=iso-8859-1', Buffer.from('Caf\xe9 notes\n\nSee https://example.org/menu for more.', 'latin1')),
      '/readme.md': send('text/markdown', '# Read me\n\nSome [docs](https://example.org/docs) here.'),
      '/fox.png': send('image/png', Buffer.alloc(64, 1)),
      '/long.txt': send('text/plain', 'word '.repeat(1000)),
      '/missing': (_req, res) => {
        res.writeHead(404, { 'content-type': 'text/html' });
        res.end('gone');
      },
      '/moved': (_req, res) => {
        res.writeHead(301, { location: '/articles/foxes' });
        res.end();
      },
      '/to-private': (_req, res) => {
        res.writeHead(302, { location: `http://127.0.0.1:${other.port}/secret` });
        res.end();
      },
      '/to-metadata': (_req, res) => {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
        res.end();
      },
      '/huge.txt': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(64 * 1024, 'a');
        for (let sent = 0; sent <= READ_MAX_BYTES; sent += chunk.length) res.write(chunk);
        res.end();
      },
      '/slow.txt': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('drip');
      },
    });
    config = testConfig({ OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}` });
  });
  after(async () => {
    await upstream.close();
    await other.close();
  });

  it('reads an article: metadata, the article text without navigation or footer, absolute deduplicated links', async () => {
    const result = await read('/articles/foxes');
    expect(readUrlOutput.safeParse(result).success).to.equal(true);
    expect(result).to.include({
      url: `${upstream.url}/articles/foxes`,
      final_url: `${upstream.url}/articles/foxes`,
      content_type: 'text/html',
      byline: 'Jane Doe',
      site_name: 'Wild Pages',
      language: 'en-GB',
      published_at: '2024-03-01T09:00:00.000Z',
      truncated: false,
    });
    expect(result.title).to.contain('How foxes hunt in winter');
    expect(result.text).to.contain('Paragraph 1: foxes are small omnivorous mammals');
    expect(result.text).to.contain('Paragraph 6');
    expect(result.text).to.match(/Paragraph 1[^\n]*\n\nParagraph 2/);
    expect(result.text).to.not.contain('NAVIGATION BOILERPLATE');
    expect(result.text).to.not.contain('FOOTER BOILERPLATE');
    expect(result.word_count).to.be.greaterThan(150);
    const urls = result.links.map((link) => link.url);
    // The article's links first, then the page's; fragments dropped, duplicates and mailto: removed.
    expect(urls.slice(0, 2)).to.deep.equal([`${upstream.url}/more/foxes`, 'https://other.example/badgers']);
    expect(result.links[0]!.text).to.equal('more about foxes');
    expect(urls).to.include(`${upstream.url}/privacy`);
    expect(new Set(urls).size).to.equal(urls.length);
    expect(urls.every((url) => /^https?:\/\//.test(url))).to.equal(true);
    expect(result.summary).to.match(/^"How foxes hunt in winter.*" from 127\.0\.0\.1:\d+: \d+ words$/);
  });

  it('follows a redirect and reports the final URL', async () => {
    const result = await read('/moved');
    expect(result.final_url).to.equal(`${upstream.url}/articles/foxes`);
    expect(result.url).to.equal(`${upstream.url}/moved`);
  });

  it('extracts the text and metadata of a PDF', async () => {
    const result = await read('/paper.pdf');
    expect(readUrlOutput.safeParse(result).success).to.equal(true);
    expect(result).to.include({
      content_type: 'application/pdf',
      title: 'A Tiny Paper',
      byline: 'Ada Lovelace',
      language: 'en-US',
      published_at: '2024-01-31T12:00:00.000Z',
    });
    expect(result.text).to.equal('Hello from a tiny PDF');
    expect(result.word_count).to.equal(5);
  });

  it('refuses a PDF whose streams inflate past the limit, or whose reading passes a ceiling, in its own thread; this process reads the next PDF', async () => {
    await failure(read('/bomb.pdf'), 'refused', /^the PDF is too large uncompressed: its streams inflate to more than the 104857600 bytes allowed/);
    // The stream check out of the way: pdf.js inflates the 150 MB itself and the memory ceiling ends it.
    await failure(
      read('/bomb.pdf', { ASSET_EXTRACTION_MAX_UNCOMPRESSED_BYTES: 2 ** 40, ASSET_EXTRACTION_MEMORY_MB: 96 }),
      'refused',
      /^opening the file needed more than 96 MB; the extraction was stopped$/,
    );
    expect((await read('/paper.pdf')).text).to.equal('Hello from a tiny PDF');
  });

  it('reads plain text in its charset, and Markdown with its heading and links', async () => {
    const text = await read('/notes.txt');
    expect(text).to.include({ content_type: 'text/plain', title: null, language: null });
    expect(text.text).to.equal('Café notes\n\nSee https://example.org/menu for more.');
    expect(text.links).to.deep.equal([{ text: '', url: 'https://example.org/menu' }]);
    const markdown = await read('/readme.md');
    expect(markdown).to.include({ content_type: 'text/markdown', title: 'Read me' });
    expect(markdown.links).to.deep.equal([{ text: 'docs', url: 'https://example.org/docs' }]);
  });

  it('cuts long text at the cap and says so', async () => {
    const result = await read('/long.txt', {}, 102);
    expect(result.truncated).to.equal(true);
    expect(result.text.length).to.be.at.most(102);
    expect(result.word_count).to.equal(20);
    expect(result.summary).to.contain('(text truncated)');
  });

  it('refuses content it cannot read, without downloading it', async () => {
    await failure(read('/fox.png'), 'refused', /content type image\/png is not readable/);
  });

  it('refuses a redirect to a private address without connecting to it', async () => {
    await failure(read('/to-private'), 'refused', /loopback address.*public internet/);
    await failure(read('/to-metadata'), 'refused', /linkLocal address/);
    expect(other.requests).to.deep.equal([]);
  });

  it('refuses a loopback URL that is not on the allowlist, naming the rule', async () => {
    await failure(
      read(`http://127.0.0.1:${other.port}/secret`),
      'refused',
      /127\.0\.0\.1 resolves to a loopback address, which is not allowed \(server-side fetches reach public addresses only; an operator may open 127\.0\.0\.1:\d+ with OUTBOUND_ALLOWLIST\); only pages on the public internet/,
    );
    await failure(read('/articles/foxes', { OUTBOUND_ALLOWLIST: [] }), 'refused', /loopback/);
    expect(other.requests).to.deep.equal([]);
  });

  it('refuses a body over the size cap', async () => {
    await failure(read('/huge.txt'), 'refused', /larger than 5 MiB/);
  });

  it('times out on a body that never ends', async () => {
    const started = Date.now();
    await failure(read('/slow.txt', { READ_TIMEOUT_MS: 300 }), 'timeout', /did not arrive in time/);
    expect(Date.now() - started).to.be.below(2_000);
  });

  it('fails on an upstream error status', async () => {
    await failure(read('/missing'), 'failed', /answered 404/);
  });
});
