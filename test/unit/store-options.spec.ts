import { describe, expect, it } from 'vitest';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';

describe("a store's options", () => {
  it('PostgresWorkflowStore refuses an unknown key', () => {
    const executor = fromPg({
      query: async () => ({ rows: [], rowCount: 0 }),
      connect: async () => ({}) as never,
    } as never);
    expect(() => new PostgresWorkflowStore({ executor, schema: 'a', migrations: false } as never)).toThrow(
      'PostgresWorkflowStore options: unknown key "migrations". Known keys: executor, schema, migrate, startupTimeout, transactions. Check its spelling.',
    );
  });
});
