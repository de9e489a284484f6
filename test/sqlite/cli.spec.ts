// `nest-workflows` on the SQLite store: migrate a file (twice: the second finds it current), print
// the script (which, run by another tool, leaves a schema the store takes as current), and the
// mistakes that exit 2.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/index.js';
import { migrationLabel } from '../../src/sql/migration-runner.js';
import { MIGRATIONS } from '../../src/sqlite/migrations.generated.js';
import { SqliteWorkflowStore } from '../../src/sqlite/index.js';

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (line) => out.push(line), err: (line) => err.push(line) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const dir = mkdtempSync(join(tmpdir(), 'nest-workflows-sqlite-cli-'));

describe('nest-workflows --sqlite', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('migrates a database file, creating it, and then finds it up to date', async () => {
    const file = join(dir, 'migrate.db');
    const first = await cli('migrate', '--sqlite', file, '--schema', 'cli_app');
    expect(first).toMatchObject({ code: 0, err: '' });
    // Every migration the package ships, in order: a new file starts from none.
    const all = MIGRATIONS.map(migrationLabel).join(', ');
    expect(first.out).toBe(`Tables "cli_app_*" in ${file}: applied ${all}.`);
    const second = await cli('migrate', `--sqlite=${file}`, '--schema', 'cli_app');
    expect(second.out).toBe(`Tables "cli_app_*" in ${file} are up to date.`);
    const store = new SqliteWorkflowStore({ path: file, schema: 'cli_app', migrate: false });
    await expect(store.init()).resolves.toBeUndefined();
    await store.close();
  });

  it('prints a script that another tool can run once, after which the store finds its tables current', async () => {
    const printed = await cli('sql', '--sqlite', '--schema', 'by_tool');
    expect(printed.code).toBe(0);
    expect(printed.out).toContain('CREATE TABLE "by_tool_instances"');
    const file = join(dir, 'script.db');
    const db = new Database(file);
    db.exec(printed.out);
    db.close();
    const store = new SqliteWorkflowStore({ path: file, schema: 'by_tool', migrate: false });
    await store.init();
    const { created } = await store.create({
      id: 'i-1',
      workflow: 'w',
      version: 1,
      input: null,
      deadline: null,
      now: 1,
    });
    expect(created).toBe(true);
    await store.close();
  });

  it('refuses migrate without a file, sql with one, and two databases at once', async () => {
    const noFile = await cli('migrate', '--sqlite');
    expect(noFile.code).toBe(2);
    expect(noFile.err).toMatch(
      /^nest-workflows: migrate --sqlite needs the database file: --sqlite \.\/workflows\.db\./,
    );
    const withFile = await cli('sql', '--sqlite', 'x.db');
    expect(withFile.code).toBe(2);
    expect(withFile.err).toMatch(/give --sqlite without a URL/);
    const two = await cli('migrate', '--sqlite', 'x.db', '--postgres', 'postgres://x');
    expect(two.err).toMatch(/Give one database: --postgres, --mysql or --sqlite\./);
  });

  it('fails a migrate --sqlite with exit 1, saying why, for a schema name it refuses', async () => {
    const result = await cli('migrate', '--sqlite', join(dir, 'bad.db'), '--schema', 'Bad-Name');
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/^nest-workflows migrate: SqliteWorkflowStore: invalid schema name "Bad-Name"/);
  });
});
