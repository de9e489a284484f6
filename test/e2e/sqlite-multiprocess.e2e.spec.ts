// Two worker processes on one SQLite file share 200 three-step instances; one is killed (SIGKILL)
// in the middle of its share. The survivor must finish every instance, each step's result
// journaled exactly once, and only steps the kill cut short may have run twice.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteWorkflowStore } from '../../src/sqlite/index.js';

const INSTANCES = 200;

describe('two worker processes on one SQLite file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nest-workflows-sqlite-e2e-'));
  const path = join(dir, 'workflows.db');
  const store = new SqliteWorkflowStore({ path });
  let db: Database.Database;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    await store.init();
    db = new Database(path, { timeout: 10_000 });
    db.exec('CREATE TABLE effects (instance TEXT NOT NULL, step INTEGER NOT NULL, pid INTEGER NOT NULL)');
  });

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    db?.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function worker(): Promise<ChildProcess> {
    const child = spawn(
      process.execPath,
      ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/sqlite-worker.ts'],
      { env: { ...process.env, WF_SQLITE_PATH: path }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    children.push(child);
    return new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`worker exited early with ${code}`)));
      child.stdout!.on('data', (data: Buffer) => {
        if (data.toString().includes('ready')) resolve(child);
      });
    });
  }

  const count = (sql: string, ...params: unknown[]) => Number((db.prepare(sql).get(...params) as { n: number }).n);

  it('finishes every instance after one process is killed mid-step, recording each step once', async () => {
    const now = Date.now();
    await Promise.all(
      Array.from({ length: INSTANCES }, (_, i) =>
        store.create({ id: `multi-${i}`, workflow: 'e2e.multi', version: 1, input: null, deadline: null, now }),
      ),
    );
    const [doomed, survivor] = await Promise.all([worker(), worker()]);
    // Kill one process while it is in the middle of its share.
    while (count('SELECT COUNT(*) AS n FROM effects WHERE pid = ?', doomed.pid) < 30) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    doomed.kill('SIGKILL');
    await once(doomed, 'exit');
    const deadline = Date.now() + 90_000;
    for (;;) {
      const done = await store.list({ status: ['completed'], limit: 1000, offset: 0 });
      if (done.length === INSTANCES) break;
      if (Date.now() > deadline) throw new Error(`only ${done.length} of ${INSTANCES} completed`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const all = await store.list({ limit: 1000, offset: 0 });
    expect(all).toHaveLength(INSTANCES);
    const finishers = new Set<number>();
    for (const instance of all) {
      const details = await store.get(instance.id, { journal: true });
      const steps = details!.journal!.filter((e) => e.kind === 'step');
      expect(steps.map((e) => [e.name, e.state])).toEqual([
        ['step-1', 'completed'],
        ['step-2', 'completed'],
        ['step-3', 'completed'],
      ]);
      for (const entry of steps) expect(entry.value).toMatchObject({ id: instance.id });
      finishers.add((details!.output as number[])[2]!);
    }
    // Both processes did work; the survivor finished what the killed one held.
    expect(count('SELECT COUNT(DISTINCT pid) AS n FROM effects')).toBe(2);
    expect(finishers.has(survivor.pid!)).toBe(true);
    // Every step ran at least once; only steps whose results the kill kept from the journal ran
    // twice: those running (at most the worker's concurrency, 5) and the last step of each
    // execution whose final write was on its way (about 5 more: docs/operations.md).
    expect(count('SELECT COUNT(*) AS n FROM (SELECT DISTINCT instance, step FROM effects)')).toBe(INSTANCES * 3);
    const repeats = count(
      'SELECT COUNT(*) AS n FROM (SELECT instance, step FROM effects GROUP BY instance, step HAVING COUNT(*) > 1)',
    );
    expect(repeats).toBeLessThanOrEqual(2 * 5);
    survivor.kill('SIGTERM');
    await once(survivor, 'exit');
  }, 120_000);
});
