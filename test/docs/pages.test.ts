import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configSchema } from '../../src/config/schema.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const readmePath = join(root, 'README.md');
const docsDir = join(root, 'docs');
const pages = readdirSync(docsDir)
  .filter((name) => name.endsWith('.md'))
  .sort();
const read = (path: string) => readFileSync(path, 'utf8');

/** The text outside fenced code blocks and inline code: a link shown as code is not a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Relative link targets of a page (external links and plain anchors of other sites aside). */
function relativeLinks(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** GitHub's heading anchors (github-slugger): lowercase, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const text = heading!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/**
 * The README is what a newcomer reads in five minutes; everything else is a page of docs/. These
 * checks keep the two connected: every page reachable from the README, no link into nothing, and
 * the configuration page complete against the schema the processes actually read.
 */
describe('README and docs/ pages', () => {
  const readme = read(readmePath);

  it('README.md stays short (≤ 250 lines) and shows `npm start` and `npm test`', () => {
    expect(readme.split('\n').length).to.be.at.most(250);
    expect(readme).to.include('npm start');
    expect(readme).to.include('npm test');
  });

  it('links every page of docs/ from README.md', () => {
    expect(pages).to.include.members(['configuration.md', 'api.md', 'security.md', 'jobs.md', 'deployment.md', 'benchmarks.md', 'architecture.md']);
    const linked = new Set(relativeLinks(readme).map((target) => target.split('#')[0]));
    expect(pages.filter((page) => !linked.has(`docs/${page}`))).to.deep.equal([]);
  });

  it('every relative link of README.md and docs/*.md names an existing file, and an existing heading', () => {
    const broken: string[] = [];
    for (const file of [readmePath, ...pages.map((page) => join(docsDir, page))]) {
      for (const target of relativeLinks(read(file))) {
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const resolved = path === '' ? file : join(dirname(file), path);
        const where = `${relative(root, file)} → ${target}`;
        if (!existsSync(resolved)) broken.push(`${where}: no such file`);
        else if (anchor && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor)) broken.push(`${where}: no such heading`);
      }
    }
    expect(broken).to.deep.equal([]);
  });

  it('docs/configuration.md lists every variable the configuration schema reads', () => {
    const configuration = read(join(docsDir, 'configuration.md'));
    const variables = Object.keys(configSchema.shape);
    expect(variables).to.include.members(['DATABASE_URL', 'JWT_SECRET', 'WORKER_CONCURRENCY']);
    expect(variables.filter((name) => !configuration.includes(`\`${name}\``))).to.deep.equal([]);
  });

  const everyPage = () => [readmePath, ...pages.map((page) => join(docsDir, page))].map((file) => ({ name: relative(root, file), text: read(file) }));

  it('every `npm run <script>` the pages show is a script of package.json', () => {
    const scripts = Object.keys(JSON.parse(read(join(root, 'package.json'))).scripts as Record<string, string>);
    const unknown = everyPage().flatMap(({ name, text }) =>
      [...text.matchAll(/npm run (?:-s )?([a-z][\w:-]*[\w-])(?![\w:*])/g)]
        .map((m) => m[1]!)
        .flatMap((script) => (scripts.includes(script) ? [] : [`${name}: ${script}`])),
    );
    expect(unknown).to.deep.equal([]);
  });

  it('every file of the repository the pages name in code (`src/…`, `test/…`, `bench/…`) exists', () => {
    const missing = everyPage().flatMap(({ name, text }) =>
      [...text.matchAll(/`((?:src|test|bench|workers|migrations|scripts|docs)\/[^`\s]+)`/g)]
        .map((m) => m[1]!)
        .filter((path) => !/[<*…]/.test(path) && !existsSync(join(root, path)))
        .map((path) => `${name}: ${path}`),
    );
    expect(missing).to.deep.equal([]);
  });

  it('the anchor rule matches GitHub on this repository’s headings', () => {
    expect(anchors('## `npm run bench:chat`: one chat turn\n## Operating jobs: the console\n## Files\n## Files')).to.deep.equal(
      new Set(['npm-run-benchchat-one-chat-turn', 'operating-jobs-the-console', 'files', 'files-1']),
    );
  });
});
