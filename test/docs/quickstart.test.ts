import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/db/embedded.ts';
import { run } from '../support/processes.ts';
import { TEST_JWT_SECRET } from '../support/config.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { type FakeUpstream, startUpstream } from '../support/upstream.ts';

const script = fileURLToPath(new URL('../../docs/quickstart.sh', import.meta.url));
const readme = fileURLToPath(new URL('../../README.md', import.meta.url));

/**
 * The README's quickstart (docs/quickstart.sh, included in the README verbatim) run as a newcomer
 * runs it, with bash, curl and `npm run token`, against a started web process and worker: from
 * nothing to an imported link, a chat answer and a generation. The link is a fake upstream the
 * server may reach (OUTBOUND_ALLOWLIST), so the test needs no internet.
 */
describe('README quickstart (docs/quickstart.sh)', function () {
  this.timeout(180_000);

  it('the README shows docs/quickstart.sh verbatim, as one sh block', () => {
    expect(readFileSync(readme, 'utf8')).to.include(`\`\`\`sh\n${readFileSync(script, 'utf8')}\`\`\``);
  });

  let upstream: FakeUpstream;
  let stack: Stack;
  before(async () => {
    upstream = await startUpstream({
      '/fox.txt': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('The red fox hunts voles under the snow.');
      },
    });
    stack = await startStack({ OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`, WORKER_POLL_INTERVAL_SECONDS: '0.5' });
  });
  after(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  it('runs from a token to an imported link, a chat answer and a generation', async () => {
    const result = await run('bash', [script], {
      API: stack.server.url,
      LINK: `${upstream.url}/fox.txt`,
      // `npm run token` signs for the server's secret, as it does beside `npm start`.
      JWT_SECRET: TEST_JWT_SECRET,
      DATABASE_URL: stack.url,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
    }).exited;
    expect(result.code, `${result.stdout}\n${result.stderr}`).to.equal(0);
    const lines = result.stdout.trim().split('\n');
    expect(JSON.parse(lines[0]!).user).to.include({ id: 'alice', email: 'alice@example.com', name: 'Alice' });
    expect(lines[1]).to.match(/^organization: \S+$/);
    expect(lines[2]).to.match(/^success \(asset [0-9a-f-]{36}\)$/);
    expect(lines[3]).to.equal('succeeded (chat run)');
    expect(lines[4]).to.match(/^\[sandbox answer\]/);
    expect(lines[5]).to.match(/^succeeded \(generation [0-9a-f-]{36}\)$/);
    expect(lines[6]).to.match(/^\d+ credits left$/);
    expect(lines).to.have.length(7);
    const imported = await stack
      .db('assets')
      .where({ organization_id: lines[1]!.slice('organization: '.length) })
      .first('upload_file_state');
    expect(imported.upload_file_state).to.equal('success');
  });

  const quickstart = (env: Record<string, string>) =>
    run('bash', [script], { API: stack.server.url, JWT_SECRET: TEST_JWT_SECRET, DATABASE_URL: stack.url, NODE_ENV: 'test', LOG_LEVEL: 'silent', ...env })
      .exited;

  /** A failed step: exit 1, and the last line of stderr says why. */
  async function expectStopped(env: Record<string, string>, reason: RegExp): Promise<string[]> {
    const result = await quickstart(env);
    expect(result.code, `${result.stdout}\n${result.stderr}`).to.equal(1);
    const said = result.stderr.trim().split('\n');
    expect(said.at(-1)).to.match(reason);
    return result.stdout.trim().split('\n');
  }

  it('offline, a link that cannot be resolved stops it (exit 1) with the import error from GET /assets/{id}', async () => {
    const lines = await expectStopped(
      { LINK: 'http://quickstart.invalid/fox.txt' },
      /^quickstart: asset [0-9a-f-]{36} ended error: dns_failed: quickstart\.invalid could not be resolved \(ENOTFOUND\)$/,
    );
    expect(lines[2]).to.match(/^error \(asset [0-9a-f-]{36}\)$/);
    expect(lines).to.have.length(3);
  });

  it('a loopback link the server is not told to allow stops it with the reason, naming OUTBOUND_ALLOWLIST', async () => {
    const closed = await freePort();
    await expectStopped(
      { LINK: `http://127.0.0.1:${closed}/fox.txt` },
      new RegExp(
        `^quickstart: asset [0-9a-f-]{36} ended error: address_not_allowed: 127\\.0\\.0\\.1 resolves to a loopback address, which is not allowed .*an operator may open 127\\.0\\.0\\.1:${closed} with OUTBOUND_ALLOWLIST\\)$`,
      ),
    );
  });

  it('a server that does not answer stops it at the first step, saying where it looked', async () => {
    const closed = await freePort();
    const lines = await expectStopped(
      { API: `http://127.0.0.1:${closed}`, LINK: `${upstream.url}/fox.txt` },
      new RegExp(`^quickstart: GET /me: no answer from http://127\\.0\\.0\\.1:${closed} \\(is \`npm start\` running\\?\\)$`),
    );
    expect(lines).to.deep.equal(['']);
  });

  it("a refused request stops it with the API's message", async () => {
    // A token the server does not accept: its 401 message, not a silent curl failure.
    await expectStopped(
      { JWT_SECRET: 'another-secret-of-at-least-32-characters!!', LINK: `${upstream.url}/fox.txt` },
      /^quickstart: GET \/me answered 401: .+$/,
    );
  });
});
