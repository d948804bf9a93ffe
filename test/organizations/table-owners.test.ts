import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';

/** Every .ts file under `dir`, relative to the repository root. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

// One owner per table (issue 20): other domains call the owner's functions (which take the
// transaction they run in), so a lock or a rule about these rows is written once.
describe('tables: one owning domain each', () => {
  const owners: [table: string, names: RegExp, owners: string[]][] = [
    ['organizations', /['"`]organizations( as \w+)?['"`]|\b(from|join|update|into)\s+organizations\b/i, ['src/organizations/', 'src/members/']],
    ['organization_members', /\borganization_members\b/, ['src/members/']],
    ['organization_roles', /\borganization_roles\b/, ['src/members/']],
  ];

  for (const [table, names, folders] of owners) {
    it(`no file of src/ or workers/ outside ${folders.join(' and ')} names ${table}`, () => {
      const offenders = [...sourceFiles('src'), ...sourceFiles('workers')]
        .filter((file) => !folders.some((folder) => file.startsWith(folder)))
        .flatMap((file) =>
          readFileSync(file, 'utf8')
            .split('\n')
            .flatMap((line, i) => (names.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
        );
      expect(offenders, `${table} is read and written by ${folders[0]} alone; call its functions instead:\n${offenders.join('\n')}`).to.deep.equal([]);
    });
  }
});
