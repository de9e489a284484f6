import { describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore } from '../../src/index.js';
import { createStorage } from './support/engine-app.js';
import { ProcessHeartbeat, PROCESS_STALE_AFTER } from '../../src/runtime/process-heartbeat.js';
import { StoreOutage } from '../../src/runtime/store-outage.js';
import type { WorkflowProcessRecord } from '../../src/storage/workflow-store.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';

/** The memory store, its `recordProcess()` held until `release()` (a slow store), failing while `failing`. */
class SlowStore extends InMemoryWorkflowStore {
  failing = false;
  private held: Array<() => void> = [];
  override async recordProcess(record: WorkflowProcessRecord, staleBefore: number): Promise<void> {
    await new Promise<void>((resolve) => this.held.push(resolve));
    if (this.failing) throw new Error('connection refused');
    return super.recordProcess(record, staleBefore);
  }
  release(): void {
    for (const resolve of this.held.splice(0)) resolve();
  }
  get waiting(): number {
    return this.held.length;
  }
}

function heartbeat(store: SlowStore, clock: ManualWorkflowClock, errors: string[]) {
  return new ProcessHeartbeat({
    storage: createStorage(store),
    clock,
    owner: 'host:1:abc',
    declared: () => [
      { name: 'b.flow', version: 2 },
      { name: 'a.flow', version: 1 },
      { name: 'b.flow', version: 1 },
    ],
    outage: new StoreOutage({ warn: () => undefined, error: (message) => void errors.push(message) }),
  });
}

describe('ProcessHeartbeat', () => {
  it('records the process with its declared versions sorted, and removes the record only after a beat still out', async () => {
    const store = new SlowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const beat = heartbeat(store, clock, []);
    const started = beat.start();
    expect(store.waiting).toBe(1);
    // Shutdown while the first record is on its way: the removal must come after it, or the row would stay.
    const stopped = beat.stop();
    store.release();
    await Promise.all([started, stopped]);
    expect(await store.processes(0)).toEqual([]);
  });

  it('records one beat at a time, each with the stale rows removed, and reports a failed beat as a store failure', async () => {
    const store = new SlowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const errors: string[] = [];
    const beat = heartbeat(store, clock, errors);
    const first = beat.start();
    void beat.beat(); // joins the beat that is out
    expect(store.waiting).toBe(1);
    store.release();
    await first;
    const [row] = await store.processes(0);
    expect(row).toMatchObject({
      owner: 'host:1:abc',
      pid: process.pid,
      declared: [
        { workflow: 'a.flow', version: 1 },
        { workflow: 'b.flow', version: 1 },
        { workflow: 'b.flow', version: 2 },
      ],
      startedAt: clock.now(),
      seenAt: clock.now(),
    });

    store.failing = true;
    clock.advance(PROCESS_STALE_AFTER + 1);
    const failed = beat.beat();
    store.release();
    await failed; // never rejects
    expect(errors).toEqual([expect.stringContaining('recording this process: connection refused')]);
    expect(await store.processes(clock.now() - PROCESS_STALE_AFTER)).toEqual([]); // stale by now

    store.failing = false;
    const next = beat.beat();
    store.release();
    await next;
    expect(await store.processes(clock.now() - PROCESS_STALE_AFTER)).toMatchObject([{ seenAt: clock.now() }]);
    const stopping = beat.stop();
    await stopping;
    expect(await store.processes(0)).toEqual([]);
  });
});
