import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as vitest from 'vitest';
import { afterAll, beforeAll } from 'vitest';
import { SqliteWorkflowStore } from '../../src/sqlite/index.js';
import type { WorkflowStore } from '../../src/storage/workflow-store.js';
import { workflowStoreContract } from '../../src/testing/workflow-store-contract.js';

// One database file for this file, migrated once; each test gets new stores (connections of their
// own) on it. The suite gives every test its own ids and names, so they share the tables safely.
// In memory-backed /dev/shm where there is one: the contract checks what the store does, not the
// disk, and every commit's fsync (synchronous = FULL) made this file the suite's slowest on disk.
// What survives a crash is the e2e tests' part (test/e2e/sqlite-*.e2e.spec.ts), on disk.
const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'nest-workflows-sqlite-contract-'));
const path = join(dir, 'contract.db');

beforeAll(async () => {
  const store = new SqliteWorkflowStore({ path });
  await store.init();
  await store.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A transaction of the application's own: a connection of its own to the file, after BEGIN. */
async function appTransaction() {
  const db = new Database(path, { timeout: 10_000 });
  db.exec('BEGIN');
  return {
    handle: db,
    commit: async () => void (db.exec('COMMIT'), db.close()),
    rollback: async () => void (db.exec('ROLLBACK'), db.close()),
  };
}

let emptyFiles = 0;
/** A store on a file of its own, for the scenarios that read or rewrite everything a store holds. */
async function emptyStore() {
  const file = join(dir, `empty-${++emptyFiles}.db`);
  const store = new SqliteWorkflowStore({ path: file });
  await store.init();
  return { store, dump: async () => sqliteDump(file), close: () => store.close() };
}

/** Every row of every table in the file, as text (read on a connection of its own). */
function sqliteDump(file: string): string {
  const db = new Database(file, { readonly: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .all() as Array<{ name: string }>;
    return tables
      .map(
        ({ name }) =>
          `${name}:\n${db
            .prepare(`SELECT * FROM "${name}"`)
            .all()
            .map((row) => JSON.stringify(row))
            .join('\n')}\n`,
      )
      .join('');
  } finally {
    db.close();
  }
}

/**
 * One store over two connections to the file, as two processes would hold them: calls alternate
 * between them, so the suite's races meet SQLite's locks (a write waiting for the other's write
 * lock), not just one connection's order. Listening stays on the first. It is still one store
 * object: a method a scenario puts on it (a wrapper holding a call) is what every later call
 * runs, on either connection, and each method reads back as the same function.
 */
function twoConnections(first: SqliteWorkflowStore, second: SqliteWorkflowStore): WorkflowStore {
  let calls = 0;
  const assigned = new Map<PropertyKey, unknown>();
  const alternating = new Map<PropertyKey, (...args: unknown[]) => unknown>();
  return new Proxy(first, {
    get(target, property, receiver) {
      if (assigned.has(property)) return assigned.get(property);
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function' || ['listen', 'listenForEnds', 'init', 'close'].includes(String(property)))
        return typeof value === 'function' ? value.bind(target) : value;
      let method = alternating.get(property);
      if (!method) {
        method = (...args: unknown[]) => {
          const store = calls++ % 2 === 0 ? first : second;
          return (Reflect.get(store, property) as (...a: unknown[]) => unknown).apply(store, args);
        };
        alternating.set(property, method);
      }
      return method;
    },
    // Without this, an assignment would land on `first` alone and the calls that go to `second` would skip it.
    set(_target, property, value) {
      assigned.set(property, value);
      return true;
    },
  });
}

workflowStoreContract(
  'sqlite',
  async () => {
    const store = new SqliteWorkflowStore({ path });
    await store.init();
    return { store, close: () => store.close() };
  },
  { test: vitest, emptyStore, appTransaction },
);

workflowStoreContract(
  'sqlite (two connections on one file)',
  async () => {
    const [first, second] = [new SqliteWorkflowStore({ path }), new SqliteWorkflowStore({ path })];
    await Promise.all([first.init(), second.init()]);
    return {
      store: twoConnections(first, second),
      close: async () => {
        await Promise.all([first.close(), second.close()]);
      },
    };
  },
  { test: vitest, emptyStore, appTransaction },
);
