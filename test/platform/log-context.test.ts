import { Writable } from 'node:stream';
import { expect } from 'chai';
import { createLogger } from '../../src/platform/logger.ts';
import { runInWorkContext } from '../../src/platform/work-context.ts';
import { startWeb } from '../../src/web.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/hooks.ts';

/** A pino destination keeping every line, raw (to see duplicated keys) and parsed. */
function captured() {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      raw.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { stream, raw, lines: () => raw.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

const occurrences = (line: string, key: string) => line.split(`"${key}":`).length - 1;

describe('log lines carry the work context', () => {
  it('stamps request_id, job_id and queue inside runInWorkContext, and nothing outside it', async () => {
    const out = captured();
    const log = createLogger({ LOG_LEVEL: 'info' }, 'test', out.stream);
    log.info('outside');
    runInWorkContext({ request_id: 'req-1' }, () => log.info('in a request'));
    await runInWorkContext({ request_id: 'req-2', job_id: 'job-9', queue: 'emails.v1' }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      log.child({ component: 'handler' }).warn('in a job, after an await, through a child');
    });
    const [outside, request, job] = out.lines();
    expect(outside).not.to.have.any.keys('request_id', 'job_id', 'queue');
    expect(request).to.include({ msg: 'in a request', request_id: 'req-1' });
    expect(request).not.to.have.any.keys('job_id', 'queue');
    expect(job).to.include({
      msg: 'in a job, after an await, through a child',
      request_id: 'req-2',
      job_id: 'job-9',
      queue: 'emails.v1',
      component: 'handler',
    });
  });

  it('writes a key once when a child logger or the call already has it', () => {
    const out = captured();
    const log = createLogger({ LOG_LEVEL: 'info' }, 'test', out.stream);
    runInWorkContext({ request_id: 'req-3', job_id: 'job-3' }, () => {
      log.child({ request_id: 'req-3' }).info('bound by a child');
      log.info({ job_id: 'explicit' }, 'given to the call');
    });
    const [child, call] = out.raw;
    expect(occurrences(child!, 'request_id')).to.equal(1);
    expect(occurrences(child!, 'job_id')).to.equal(1);
    expect(occurrences(call!, 'job_id')).to.equal(1);
    expect(JSON.parse(call!)).to.include({ job_id: 'explicit', request_id: 'req-3' });
  });

  it("a real request's log lines carry the request id echoed in X-Request-Id", async () => {
    const out = captured();
    const config = testConfig({ LOG_LEVEL: 'info' });
    const web = await startWeb(config, testDatabase().url, createLogger(config, 'test-web', out.stream));
    try {
      const address = web.server.address();
      const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const given = await fetch(`${base}/healthz`, { headers: { 'x-request-id': 'trace-abc.1' } });
      expect(given.headers.get('x-request-id')).to.equal('trace-abc.1');
      const made = await fetch(`${base}/no-such-path`); // 401: no token
      const madeId = made.headers.get('x-request-id');
      expect(madeId).to.match(/^[0-9a-f-]{36}$/);

      const access = out.lines().filter((line) => line.msg === 'request');
      expect(access.find((line) => line.path === '/healthz')).to.include({ request_id: 'trace-abc.1', status: 200 });
      expect(access.find((line) => line.path === '/no-such-path')).to.include({ request_id: madeId, status: 401 });
      for (const line of out.raw.filter((raw) => raw.includes('"msg":"request"'))) expect(occurrences(line, 'request_id')).to.equal(1);
    } finally {
      await web.stop();
    }
  });
});
