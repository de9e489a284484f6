// While another connection holds the file's write lock, a write of the store waits without
// stalling the event loop (SQLite blocks at most a few milliseconds per attempt), lands once the
// lock is free, and fails with a message that says why once busyTimeout has passed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SqliteWorkflowStore } from '../../src/sqlite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'nest-workflows-sqlite-locks-'));
const path = join(dir, 'locks.db');
const newInstance = (id: string) => ({ id, workflow: 'locks', version: 1, input: null, deadline: null, now: 1 });

describe('SqliteWorkflowStore waiting for a write lock another connection holds', () => {
  let other: Database.Database;
  const stores: SqliteWorkflowStore[] = [];

  beforeAll(async () => {
    const store = new SqliteWorkflowStore({ path });
    await store.init();
    await store.close();
    other = new Database(path);
  });
  afterEach(async () => {
    if (other.inTransaction) other.exec('ROLLBACK');
    for (const store of stores.splice(0)) await store.close();
  });
  afterAll(() => {
    other.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the event loop turning while it waits, and writes once the lock is free', async () => {
    const store = new SqliteWorkflowStore({ path });
    stores.push(store);
    await store.init();
    other.exec('BEGIN IMMEDIATE');
    let longestGap = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      longestGap = Math.max(longestGap, now - last);
      last = now;
    }, 1);
    const created = store.create(newInstance('waits-1'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    other.exec('COMMIT');
    await expect(created).resolves.toMatchObject({ created: true });
    clearInterval(ticker);
    // SQLite blocks for at most 5 ms per attempt; the rest is scheduling (a loaded machine adds some).
    expect(longestGap).toBeLessThan(100);
  });

  it('fails after busyTimeout, saying another connection holds the lock, having written nothing', async () => {
    const store = new SqliteWorkflowStore({ path, busyTimeout: 200 });
    stores.push(store);
    await store.init();
    other.exec('BEGIN IMMEDIATE');
    await expect(store.create(newInstance('waits-2'))).rejects.toThrow(
      /the database stayed locked for longer than busyTimeout \(200 ms\)/,
    );
    other.exec('COMMIT');
    expect(await store.get('waits-2')).toBeNull();
  });
});
