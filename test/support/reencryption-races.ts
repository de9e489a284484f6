// Re-encryption against writes that land between its steps, each staged at one exact point (a
// store wrapper runs the other process's write there), on any store: what the run reports as done
// must be done.
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { AesGcmPayloadCodec, WorkflowStorage, type WorkflowStore } from '../../src/index.js';
import { PayloadCodecChain } from '../../src/codec/payload-codec-chain.js';
import type { WorkflowScheduleQuery } from '../../src/storage/workflow-store.js';

const T = Date.parse('2026-01-01T00:00:00Z');

function storageWith(store: WorkflowStore, ...codecs: AesGcmPayloadCodec[]): WorkflowStorage {
  return new WorkflowStorage(store, { codecs: new PayloadCodecChain({ codecs, allowUnencoded: false }) });
}

/**
 * Three schedules under the old key; re-encryption reads them one per page, and another process
 * deletes the first (already rewritten) before the second page is read. With pages by offset, the
 * second page started one schedule too far on: the second schedule was never read, and the run
 * still said nothing was left. Every schedule left must be readable with the new key alone.
 */
export async function scheduleDeletedBetweenPages(store: WorkflowStore): Promise<void> {
  const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'race-old' });
  const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'race-new' });
  const old = storageWith(store, k1);
  for (const id of ['race-a', 'race-b', 'race-c']) {
    const saved = await old.schedules.saveSchedule({
      id,
      workflow: 'race.flow',
      declared: false,
      spec: { every: 3_600_000 },
      input: { secret: id },
      paused: false,
      wakeAt: null,
      state: {},
      expectRevision: null,
      releaseLease: false,
      now: T,
    });
    expect(saved).not.toBeNull();
  }

  let pages = 0;
  const racing = new Proxy(store, {
    get(target, property, receiver) {
      if (property !== 'listSchedules') return Reflect.get(target, property, receiver) as unknown;
      return async (query: WorkflowScheduleQuery) => {
        // Between the first page (race-a, rewritten by now) and the second: an operator deletes race-a.
        if (pages++ === 1) expect(await target.deleteSchedule('race-a')).toBe(true);
        return target.listSchedules(query);
      };
    },
  });
  const result = await storageWith(racing, k2, k1).reencrypt({ batchSize: 1 }, () => T + 1);
  expect(pages).toBeGreaterThan(1);
  expect(result).toMatchObject({ unreadable: 0, remaining: 0 });

  // Done, it said: the old key can go. Then every schedule left reads with the new key alone.
  const fresh = storageWith(store, k2);
  for (const id of ['race-b', 'race-c']) expect((await fresh.schedules.getSchedule(id))?.input).toEqual({ secret: id });
}
