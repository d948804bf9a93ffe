import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot, run } from '../support/processes.ts';

const scripts = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
/** The npm scripts that run one of our TypeScript programs (a CLI, a process, a benchmark), with its file. */
const programs = Object.entries(scripts)
  .map(([name, command]) => [name, /^(?:(?:[A-Z_]+=\S+ )*exec node(?: --import tsx)?|tsx) (\S+\.ts)$/.exec(command)?.[1]] as const)
  .filter((entry): entry is readonly [string, string] => entry[1] !== undefined);
const benchmarks = programs.filter(([name]) => name.startsWith('bench:'));

/** `npm run X -- --help` of every program: its usage on stdout, exit 0, before any work (no database, no port). */
describe('every CLI answers --help', function () {
  this.timeout(120_000);

  it('finds the programs of package.json', () => {
    expect(programs.map(([name]) => name)).to.include.members(['start', 'web', 'worker', 'migrate', 'token', 'connectors:reencrypt', 'ops', 'ops:types']);
    expect(benchmarks.length).to.be.greaterThan(10);
  });

  // Every benchmark reads its flags through bench/support/bench.ts readFlags, which answers --help; two are run.
  const run_ = programs.filter(([name]) => !name.startsWith('bench:') || name === 'bench:soak' || name === 'bench:jobs');
  for (const [name] of run_) {
    it(`npm run ${name} -- --help`, async () => {
      const exit = await run('npm', ['run', '--silent', name, '--', '--help'], { DATA_DIR: '/nonexistent/cli-help', DATABASE_URL: '' }).exited;
      expect({ code: exit.code, stderr: exit.stderr }).to.deep.equal({ code: 0, stderr: '' });
      expect(exit.stdout).to.match(new RegExp(`^usage: npm (run )?${name.replace(':', '\\:')}\\b`));
      expect(exit.stdout.split('\n').length, exit.stdout).to.be.greaterThan(2);
    });
  }

  it('every benchmark reads its flags with readFlags (which answers --help)', () => {
    for (const [name, file] of benchmarks) expect(readFileSync(path.join(repoRoot, file), 'utf8'), name).to.match(/^readFlags\(\);$/m);
  });

  it('npm run token with an unknown option says so in one line and shows the usage (exit 2), no stack', async () => {
    const exit = await run('npm', ['run', '--silent', 'token', '--', '--nope'], {}).exited;
    expect(exit.code).to.equal(2);
    expect(exit.stderr.split('\n')[0]).to.match(/^Unknown option '--nope'/);
    expect(exit.stderr).to.include('usage: npm run token -- --sub USER_ID');
    expect(exit.stderr).to.not.match(/\n\s+at /);
  });
});
