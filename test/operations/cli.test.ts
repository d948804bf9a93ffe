import { expect } from 'chai';
import { assetImportJob } from '../../src/assets/jobs.ts';
import { runCli } from '../../src/operations/cli.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { allowNoRetry } from './support.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

/**
 * `npm run ops` end to end: runCli against a real web process and worker, with a real operator
 * token. The failed job is a link import whose upstream answers 503 until the test lets it succeed;
 * its queue allows no retry, so the first failure is final (state `failed`).
 */
describe('operator CLI (npm run ops)', function () {
  this.timeout(60_000);
  let stack: Stack;
  let upstream: FakeUpstream;
  let operator: TestUser;
  let alice: TestUser;
  let org: string;
  /** Import sources (the `n` query parameter) the fake upstream now serves. */
  const healthy = new Set<string>();

  before(async () => {
    upstream = await startUpstream({
      '/flaky.txt': (req, res) => {
        const n = new URL(req.url ?? '/', 'http://upstream').searchParams.get('n') ?? '';
        if (!healthy.has(n)) {
          res.writeHead(503);
          res.end();
          return;
        }
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`document ${n}`);
      },
    });
    stack = await startStack({ OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`, WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    await allowNoRetry(stack);
    operator = newOperator();
    alice = newUser();
    org = await createOrganization(stack.server, alice);
  });
  after(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  /** Starts a link import of `/flaky.txt?n=<n>` and waits for its job to fail; returns the job and asset ids. */
  const failedImport = async (n: string) => {
    const res = await stack.server.request('post', '/assets/imports/link', {
      token: alice.token,
      body: { organization_id: org, url: `${upstream.url}/flaky.txt?n=${n}` },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const assetId = res.body.id as string;
    const job = await eventually(`the import job of asset ${assetId} failed`, async () => {
      const row = await stack.db('pgboss.job').where({ name: assetImportJob.name }).whereRaw(`data->>'asset_id' = ?`, [assetId]).first('id', 'state');
      return row?.state === 'failed' && row;
    });
    return { assetId, jobId: job.id as string };
  };

  const cli = async (argv: string[], token = operator.token) => {
    let stdout = '';
    let stderr = '';
    const code = await runCli([...argv, '--url', stack.server.url, '--token', token], {
      fetch: globalThis.fetch,
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: {},
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.min(ms, 100))),
    });
    return { code, stdout, stderr };
  };

  let failed: { assetId: string; jobId: string };

  it('jobs list --state failed: the failed job, as the JSON page and as an aligned table', async () => {
    failed = await failedImport('one');

    const json = await cli(['jobs', 'list', '--state', 'failed', '--json']);
    expect(json.code, json.stderr).to.equal(0);
    const page = JSON.parse(json.stdout);
    const job = page.items.find((item: any) => item.id === failed.jobId);
    expect(job).to.deep.include({ queue: assetImportJob.name, state: 'failed', organization_id: org });
    expect(page.items.every((item: any) => item.state === 'failed')).to.equal(true);
    expect(page.total.value).to.be.at.least(1);

    const table = await cli(['jobs', 'list', '--state', 'failed', '--queue', assetImportJob.name]);
    expect(table.code, table.stderr).to.equal(0);
    const [header, ...lines] = table.stdout.split('\n');
    expect(header).to.match(/^ID\s+QUEUE\s+STATE\s+ORGANIZATION\s+ATTEMPTS\s+CREATED\s+REQUEST$/);
    const row = lines.find((line) => line.startsWith(failed.jobId));
    expect(row, table.stdout).to.match(new RegExp(`^${failed.jobId}\\s+${assetImportJob.name.replaceAll('.', '\\.')}\\s+failed\\s+${org}\\s`));
    // Columns line up: the state column starts at the same offset in the header and the row.
    expect(row!.indexOf(' failed ') + 1).to.equal(header!.indexOf('STATE'));
    expect(table.stdout).to.match(/\d+ of ~?\d+ jobs created /);
  });

  it('jobs show ID: the job, its payload and its attempts', async () => {
    const shown = await cli(['jobs', 'show', failed.jobId]);
    expect(shown.code, shown.stderr).to.equal(0);
    expect(shown.stdout).to.match(new RegExp(`^id:\\s+${failed.jobId}$`, 'm'));
    expect(shown.stdout).to.match(/^state:\s+failed$/m);
    expect(shown.stdout).to.include(failed.assetId);
    expect(shown.stdout).to.match(/^attempts:$/m);
  });

  it('jobs retry ID: once the upstream answers, the job completes (and the retry is on record)', async () => {
    healthy.add('one');
    const retried = await cli(['jobs', 'retry', failed.jobId, '--reason', 'upstream is back']);
    expect(retried.code, retried.stderr).to.equal(0);
    expect(retried.stdout).to.match(
      new RegExp(`^job ${failed.jobId} \\(${assetImportJob.name.replaceAll('.', '\\.')}\\): (created|retry|active|completed)\\n$`),
    );

    const detail = await eventually('the retried job completed', async () => {
      const shown = await cli(['jobs', 'show', failed.jobId, '--json']);
      expect(shown.code, shown.stderr).to.equal(0);
      const body = JSON.parse(shown.stdout);
      return body.job.state === 'completed' && body;
    });
    expect(detail.actions.map((action: any) => [action.action, action.reason])).to.deep.include(['job.retry', 'upstream is back']);
    const asset = await stack.db('assets').where({ id: failed.assetId }).first('upload_file_state');
    expect(asset.upload_file_state).to.equal('success');
  });

  it('redrive QUEUE: previews, creates the bulk action and follows it to the end', async () => {
    const second = await failedImport('two');
    healthy.add('two');
    const redriven = await cli(['redrive', assetImportJob.name, '--reason', 'upstream outage over', '--interval', '100']);
    expect(redriven.code, `${redriven.stdout}\n${redriven.stderr}`).to.equal(0);
    expect(redriven.stdout).to.match(new RegExp(`^redriving \\d+ dead letters of ${assetImportJob.name.replaceAll('.', '\\.')}\\.dead\\n`));
    expect(redriven.stdout).to.match(/^completed: (\d+)\/\1 \(\d+ redriven, \d+ skipped\)$/m);
    await eventually('the redriven import succeeded', async () => {
      const asset = await stack.db('assets').where({ id: second.assetId }).first('upload_file_state');
      return asset.upload_file_state === 'success';
    });
  });

  it('queues and workers: tables with a header and a row each', async () => {
    const queues = await cli(['queues']);
    expect(queues.code, queues.stderr).to.equal(0);
    const [queueHeader, ...queueLines] = queues.stdout.split('\n');
    expect(queueHeader).to.match(/^QUEUE\s+CREATED\s+RETRY\s+ACTIVE\s+DEFERRED\s+FAILED\s+COMPLETED\s+CANCELLED\s+OLDEST\s+WORKERS\s+PAUSED$/);
    expect(queueLines.some((line) => line.startsWith(`${assetImportJob.name} `))).to.equal(true);

    const workers = await cli(['workers']);
    expect(workers.code, workers.stderr).to.equal(0);
    const [workerHeader, ...workerLines] = workers.stdout.split('\n');
    expect(workerHeader).to.match(/^ID\s+HOST\s+PID\s+VERSION\s+STATUS\s+QUEUES\s+CONCURRENCY\s+IN FLIGHT\s+STARTED\s+LAST HEARTBEAT$/);
    expect(
      workerLines.some((line) => /^[0-9a-f-]{36}\s+\S+\s+\d+\s+\S+\s+live\s/.test(line)),
      workers.stdout,
    ).to.equal(true);

    const json = await cli(['queues', '--json']);
    expect(JSON.parse(json.stdout).items.map((queue: any) => queue.name)).to.include(assetImportJob.name);
  });

  it('a token the API refuses: exit 1 with the error code on stderr', async () => {
    const refused = await cli(['queues'], 'not-a-token');
    expect(refused.code).to.equal(1);
    expect(refused.stdout).to.equal('');
    expect(refused.stderr).to.match(/^error: unauthorized: .+\(HTTP 401\)\n$/);

    const notOperator = await cli(['workers'], alice.token);
    expect(notOperator.code).to.equal(1);
    expect(notOperator.stderr).to.match(/^error: forbidden: /);
  });

  it("tenants' text cannot act on the terminal: control and bidi characters print as visible escapes, in tables and JSON", async () => {
    // A bidi override passes the API's title rule (it is not a control character); ESC and a C1 CSI stand for text stored before that rule.
    const created = await stack.server.request('post', '/scheduled-tasks', {
      token: alice.token,
      body: { organization_id: org, title: 'Report \u202eexe.txt', prompt: 'Summarise', schedule: { cron: '0 8 * * 1', timezone: 'UTC' } },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const title = 'Report \u001b[2J\u001b]0;owned\u0007 \u009b31m \u202eexe.txt';
    await stack.db('scheduled_tasks').where({ id: created.body.scheduled_task.id }).update({ title });
    const unsafe = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

    const table = await cli(['schedules', '--organization', org]);
    expect(table.code, table.stderr).to.equal(0);
    expect(table.stdout).to.not.match(unsafe);
    const row = table.stdout.split('\n').find((line) => line.startsWith(`task:${created.body.scheduled_task.id}`));
    expect(row).to.include(String.raw`Report \u001b[2J\u001b]0;owned\u0007 \u009b31m \u202eexe.txt`);

    const json = await cli(['schedules', '--organization', org, '--json']);
    expect(json.stdout).to.not.match(unsafe);
    // Still the API's answer: the escapes are JSON's own, so the title parses back to what was stored.
    expect(JSON.parse(json.stdout).items.find((s: { key: string }) => s.key === `task:${created.body.scheduled_task.id}`).title).to.equal(title);
  });

  it('usage errors exit 2 with the usage text', async () => {
    for (const argv of [['frobnicate'], ['jobs', 'explode'], ['jobs', 'show'], ['queues', '--state', 'failed'], ['jobs', 'list', '--limit', 'ten'], []]) {
      const run = await cli(argv);
      expect(run.code, argv.join(' ')).to.equal(2);
      expect(run.stdout).to.equal('');
      expect(run.stderr).to.include('usage: npm run ops -- <command>');
    }
    expect((await cli(['frobnicate'])).stderr).to.match(/^unknown command: frobnicate\n/);
  });
});
