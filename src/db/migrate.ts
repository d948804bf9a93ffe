import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Knex } from 'knex';
import type { Db } from './knex.ts';

export const migrationsDir = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * Loads `migrations/*.ts` through ESM import, so migrations are TypeScript modules like the rest
 * of the code (knex's own loader would `require` them).
 */
class DirectoryMigrationSource implements Knex.MigrationSource<string> {
  private readonly dir: string;
  constructor(dir: string) {
    this.dir = dir;
  }

  async getMigrations(): Promise<string[]> {
    const files = await readdir(this.dir);
    return files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts')).sort();
  }

  getMigrationName(migration: string): string {
    return migration;
  }

  async getMigration(migration: string): Promise<Knex.Migration> {
    return (await import(pathToFileURL(path.join(this.dir, migration)).href)) as Knex.Migration;
  }
}

export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource: new DirectoryMigrationSource(migrationsDir) })) as [number, string[]];
  return applied;
}
