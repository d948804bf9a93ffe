import { expect } from 'chai';
import { ConfigError, parseConfig } from '../../src/config/load.ts';
import { nodeWithTsx, run } from '../support/processes.ts';

const valid = { NODE_ENV: 'test', DATABASE_URL: 'postgres://nobody:secret@127.0.0.1:1/none', JWT_SECRET: 'x'.repeat(40), LOG_LEVEL: 'silent', PORT: '0' };

describe('configuration at boot', () => {
  // The rules, checked where they live (parseConfig); the one spawned case below proves the processes apply them.
  const cases: [string, Record<string, string>, string, RegExp][] = [
    ['PORT=abc', { PORT: 'abc' }, 'PORT', /^Invalid configuration: PORT /],
    ['PORT=70000', { PORT: '70000' }, 'PORT', /^Invalid configuration: PORT /],
    ['RATE_LIMIT_PER_MINUTE=0', { RATE_LIMIT_PER_MINUTE: '0' }, 'RATE_LIMIT_PER_MINUTE', /^Invalid configuration: RATE_LIMIT_PER_MINUTE /],
    [
      'RATE_LIMIT_PER_ADDRESS_PER_MINUTE=0',
      { RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '0' },
      'RATE_LIMIT_PER_ADDRESS_PER_MINUTE',
      /^Invalid configuration: RATE_LIMIT_PER_ADDRESS_PER_MINUTE /,
    ],
    ['DATABASE_URL=mysql://x', { DATABASE_URL: 'mysql://x' }, 'DATABASE_URL', /^Invalid configuration: DATABASE_URL must be a postgres:\/\/ URL$/],
    [
      'NODE_ENV=production without JWT_SECRET or JWKS_URI',
      { NODE_ENV: 'production', JWT_SECRET: '', JWKS_URI: '' },
      'JWT_SECRET',
      /^Invalid configuration: JWT_SECRET is required in production unless JWKS_URI is set$/,
    ],
    ['LOG_LEVEL=loud', { LOG_LEVEL: 'loud' }, 'LOG_LEVEL', /^Invalid configuration: LOG_LEVEL /],
    ['JWT_SECRET too short', { JWT_SECRET: 'short' }, 'JWT_SECRET', /^Invalid configuration: JWT_SECRET must be at least 32 characters$/],
  ];

  for (const [label, env, variable, line] of cases) {
    it(`${label} is refused with one line naming ${variable}`, () => {
      let error: unknown;
      try {
        parseConfig({ ...valid, ...env });
      } catch (thrown) {
        error = thrown;
      }
      expect(error).to.be.instanceOf(ConfigError);
      const message = (error as ConfigError).message;
      expect(message).to.match(line);
      expect(message).to.include(variable);
      expect(message).to.not.include('\n');
    });
  }

  it('accepts the valid environment, with the documented defaults', () => {
    const config = parseConfig(valid);
    expect(config).to.include({ PORT: 0, RATE_LIMIT_PER_MINUTE: 600, RATE_LIMIT_PER_ADDRESS_PER_MINUTE: 120, STARTER_CREDITS: 1000 });
  });

  it('a bad variable stops the web and the worker process with exit 1, one stderr line naming it and no other output', async function () {
    this.timeout(60_000);
    const [web, worker] = await Promise.all(
      ['src/web.ts', 'workers/main.ts'].map((file) => run(...nodeWithTsx(file), { ...valid, RATE_LIMIT_PER_MINUTE: '-5' }).exited),
    );
    for (const exit of [web!, worker!]) {
      expect(exit.code, exit.stderr).to.equal(1);
      expect(
        exit.stderr.split('\n').filter((l) => l.trim() !== ''),
        exit.stderr,
      ).to.have.length(1);
      expect(exit.stderr).to.match(/^Invalid configuration: RATE_LIMIT_PER_MINUTE /);
      expect(exit.stdout).to.equal('');
    }
  });
});
