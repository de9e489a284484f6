import { describe, expect, it } from 'vitest';
import { WorkflowSchemaError } from '../../src/errors/workflow-schema.error.js';
import { MigrationRunner, type MigrationDialect, type SqlMigration } from '../../src/sql/migration-runner.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';

const SHIPPED: SqlMigration[] = [
  { version: 1, name: 'init', sql: '-- 1' },
  { version: 2, name: 'indexes', sql: '-- 2' },
];

/**
 * A dialect over an in-memory history: `applied` is what a read without the lock finds,
 * `underLock` (default: the same) what the read under the lock finds, as when another process
 * migrated while this one waited for the lock.
 */
function fakeDialect(applied: number[], underLock = applied) {
  const calls = { prepared: 0, applied: [] as number[] };
  let locked = false;
  const dialect: MigrationDialect = {
    appliedVersions: async () => [...(locked ? underLock : applied)],
    withLock: async (executor, fn) => {
      locked = true;
      try {
        return await fn(executor);
      } finally {
        locked = false;
      }
    },
    prepare: async () => {
      calls.prepared += 1;
    },
    apply: async (_executor, migration) => {
      calls.applied.push(migration.version);
    },
  };
  return { dialect, calls };
}

const executor = {} as SqlExecutor;
const target = { store: 'TestStore', schema: 'orders' };

describe('MigrationRunner and a schema a newer version migrated', () => {
  it('pending() refuses a schema whose history holds a version this build does not ship, naming it', async () => {
    const { dialect } = fakeDialect([1, 2, 4, 3]);
    const error = await new MigrationRunner(executor, dialect, SHIPPED, target).pending().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowSchemaError);
    expect((error as Error).message).toContain('TestStore: the schema "orders" holds migration(s) 0003, 0004');
    expect((error as Error).message).toContain('the latest it ships is 0002_indexes');
    expect((error as Error).message).toContain('a newer version of the package migrated it');
  });

  it('migrate() refuses it before taking the lock or applying anything, even when this build has migrations pending', async () => {
    const { dialect, calls } = fakeDialect([1, 5]);
    await expect(new MigrationRunner(executor, dialect, SHIPPED, target).migrate()).rejects.toThrow(
      /holds migration\(s\) 0005/,
    );
    expect(calls).toEqual({ prepared: 0, applied: [] });
  });

  it('migrate() refuses it when a newer version migrated while this process waited for the lock', async () => {
    const { dialect, calls } = fakeDialect([1], [1, 2, 3]);
    const error = await new MigrationRunner(executor, dialect, SHIPPED, target).migrate().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowSchemaError);
    expect((error as Error).message).toContain('holds migration(s) 0003');
    expect(calls.applied).toEqual([]);
  });

  it('a current schema, or one that is behind, is used as before', async () => {
    expect(await new MigrationRunner(executor, fakeDialect([1, 2]).dialect, SHIPPED, target).pending()).toEqual([]);
    const behind = fakeDialect([1]);
    const runner = new MigrationRunner(executor, behind.dialect, SHIPPED, target);
    expect((await runner.pending()).map((m) => m.version)).toEqual([2]);
    expect((await runner.migrate()).map((m) => m.version)).toEqual([2]);
    expect(behind.calls.applied).toEqual([2]);
  });

  it('without a target the message still names the versions', async () => {
    const error = await new MigrationRunner(executor, fakeDialect([7]).dialect, SHIPPED)
      .pending()
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^The schema holds migration\(s\) 0007,/);
  });
});
