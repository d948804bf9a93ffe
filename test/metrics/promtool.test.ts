import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { promlint } from '../support/promlint.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createOrganization, newUser } from '../support/factories.ts';

const TOKEN = 'promtool-token-0123456789abcdef';

/** `promtool check metrics`, when the machine has promtool (Debian: apt-get install prometheus); else undefined. */
function promtool(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** GET /metrics passes promtool's checks: with promtool where it is installed, and always with the same rules in code. */
describe('GET /metrics passes `promtool check metrics`', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ METRICS_TOKEN: TOKEN });
    const owner = newUser();
    await createOrganization(server, owner);
    await server.request('get', '/healthz');
  });
  after(async () => server?.stop());

  const scrape = async () => {
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).to.equal(200);
    return res.text();
  };

  it('the lint rules in code find nothing', async () => {
    const text = await scrape();
    expect(text).to.include('http_requests_total');
    expect(promlint(text)).to.deep.equal([]);
  });

  it('promtool itself finds nothing (where installed)', async function () {
    const binary = promtool();
    if (!binary) return this.skip();
    const checked = spawnSync(binary, ['check', 'metrics'], { input: await scrape(), encoding: 'utf8' });
    expect(`${checked.stdout}${checked.stderr}`.trim()).to.equal('');
    expect(checked.status).to.equal(0);
  });

  it('the rules catch what promtool catches', () => {
    const bad = [
      '# HELP requests Requests.',
      '# TYPE requests counter',
      'requests 1',
      '# TYPE latency_ms gauge',
      'latency_ms 3',
      '# HELP queueDepth Depth.',
      '# TYPE queueDepth gauge',
      'queueDepth{le="1"} 2',
      '# HELP up_total Up.',
      '# TYPE up_total gauge',
      'up_total 1',
      'up_total 1',
    ].join('\n');
    expect(promlint(bad)).to.deep.equal([
      'requests: counter metrics should have "_total" suffix',
      'latency_ms: no help text',
      'latency_ms: metric names should not contain abbreviated units ("ms")',
      "queueDepth: metric names should be written in 'snake_case' not 'camelCase'",
      'queueDepth: non-histogram metrics should not have "le" label',
      'up_total: non-counter metrics should not have "_total" suffix',
      'up_total: duplicate series up_total{}',
    ]);
  });
});
