import { expect } from 'chai';
import path from 'node:path';
import { repoRoot, run } from '../support/processes.ts';

const tsx = path.join(repoRoot, 'node_modules/.bin/tsx');
const valid = { NODE_ENV: 'test', DATABASE_URL: 'postgres://nobody:secret@127.0.0.1:1/none', JWT_SECRET: 'x'.repeat(40), LOG_LEVEL: 'silent', PORT: '0' };

describe('configuration at boot', () => {
  const cases: [string, Record<string, string>, string, RegExp][] = [
    ['PORT=abc', { PORT: 'abc' }, 'PORT', /^Invalid configuration: PORT /],
    ['PORT=70000', { PORT: '70000' }, 'PORT', /^Invalid configuration: PORT /],
    ['RATE_LIMIT_PER_MINUTE=0', { RATE_LIMIT_PER_MINUTE: '0' }, 'RATE_LIMIT_PER_MINUTE', /^Invalid configuration: RATE_LIMIT_PER_MINUTE /],
    ['DATABASE_URL=mysql://x', { DATABASE_URL: 'mysql://x' }, 'DATABASE_URL', /^Invalid configuration: DATABASE_URL must be a postgres:\/\/ URL$/],
    ['NODE_ENV=production without JWT_SECRET or JWKS_URI', { NODE_ENV: 'production', JWT_SECRET: '', JWKS_URI: '' }, 'JWT_SECRET', /^Invalid configuration: JWT_SECRET is required in production unless JWKS_URI is set$/],
    ['LOG_LEVEL=loud', { LOG_LEVEL: 'loud' }, 'LOG_LEVEL', /^Invalid configuration: LOG_LEVEL /],
    ['JWT_SECRET too short', { JWT_SECRET: 'short' }, 'JWT_SECRET', /^Invalid configuration: JWT_SECRET must be at least 32 characters$/],
  ];

  for (const [label, env, variable, line] of cases) {
    it(`${label} stops the web process with exit 1 and one stderr line naming ${variable}`, async function () {
      this.timeout(60_000);
      const exit = await run(tsx, ['src/web.ts'], { ...valid, ...env }).exited;
      expect(exit.code, exit.stderr).to.equal(1);
      const lines = exit.stderr.split('\n').filter((l) => l.trim() !== '');
      expect(lines, exit.stderr).to.have.length(1);
      expect(lines[0]).to.match(line);
      expect(lines[0]).to.include(variable);
      expect(exit.stdout).to.equal('');
    });
  }

  it('the worker process refuses a bad variable the same way', async function () {
    this.timeout(60_000);
    const exit = await run(tsx, ['workers/main.ts'], { ...valid, RATE_LIMIT_PER_MINUTE: '-5' }).exited;
    expect(exit.code).to.equal(1);
    expect(exit.stderr.trim().split('\n')).to.have.length(1);
    expect(exit.stderr).to.match(/^Invalid configuration: RATE_LIMIT_PER_MINUTE /);
  });
});
