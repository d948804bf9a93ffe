import { expect } from 'chai';
import { Writable } from 'node:stream';
import { consoleDestination, createLogger } from '../../src/platform/logger.ts';

/** A stream that keeps what is written, and says whether it is a terminal. */
function sink(isTTY: boolean): Writable & { isTTY: boolean; text(): string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  }) as Writable & { isTTY: boolean; text(): string };
  stream.isTTY = isTTY;
  stream.text = () => chunks.join('');
  return stream;
}

/** Logs are readable on a terminal (pino-pretty) and one JSON object a line anywhere else. */
describe('log format: pretty on a terminal, JSON elsewhere', () => {
  it('on a terminal: pino-pretty lines (level, name, message, fields), not JSON', async () => {
    const terminal = sink(true);
    const log = createLogger({ LOG_LEVEL: 'info' }, 'web', consoleDestination(terminal));
    log.info({ url: 'http://localhost:3000' }, 'web listening');
    await new Promise((resolve) => setImmediate(resolve));
    // Colours stripped: the layout is what a reader sees.
    const text = terminal.text().replace(/\u001b\[[0-9;]*m/g, '');
    expect(text).to.match(/INFO.*\(web\).*web listening/);
    expect(text).to.include('{"url":"http://localhost:3000"}');
    expect(() => JSON.parse(text.split('\n')[0]!)).to.throw();
  });

  it('on a terminal: one line per request, its fields inline', async () => {
    const terminal = sink(true);
    const log = createLogger({ LOG_LEVEL: 'info' }, 'web', consoleDestination(terminal));
    log.child({ request_id: '3f1c' }).info({ method: 'GET', path: '/me', status: 200, ms: 3.2, user_id: 'alice' }, 'request');
    await new Promise((resolve) => setImmediate(resolve));
    const text = terminal.text().replace(/\u001b\[[0-9;]*m/g, '');
    expect(text.trimEnd().split('\n')).to.have.length(1);
    expect(text).to.match(/INFO \(web\): request \{"request_id":"3f1c","method":"GET","path":"\/me","status":200,"ms":3\.2,"user_id":"alice"\}\n$/);
  });

  it('elsewhere (a pipe, a file, a log collector): no pretty stream, so pino writes JSON lines', () => {
    expect(consoleDestination(sink(false))).to.equal(undefined);
    const pipe = sink(false);
    const log = createLogger({ LOG_LEVEL: 'info' }, 'web', consoleDestination(pipe) ?? pipe);
    log.info({ url: 'http://localhost:3000' }, 'web listening');
    const line = JSON.parse(pipe.text().trim());
    expect(line).to.include({ level: 30, name: 'web', msg: 'web listening', url: 'http://localhost:3000' });
  });
});
