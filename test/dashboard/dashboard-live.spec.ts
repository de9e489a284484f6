import { afterEach, describe, expect, it, vi } from 'vitest';
import { DashboardChanges } from '../../src/dashboard/dashboard-changes.js';
import { DashboardLive, type DashboardLiveReads } from '../../src/dashboard/dashboard-live.js';
import { WorkflowEvents } from '../../src/events/workflow-events.js';
import { WorkflowNotFoundError } from '../../src/errors/workflow-not-found.error.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A client whose instance `x` reads as `state.x` (gone when undefined), and whose list reads `state.list`. */
function reads(state: { x?: { status: string; updatedAt: number }; list: string[] }) {
  const calls = { getStatus: 0, list: 0 };
  const client = {
    async getStatus(id: string) {
      calls.getStatus++;
      if (!state.x) throw new WorkflowNotFoundError(`No instance has the id "${id}".`);
      return { id, runs: 1, ...state.x };
    },
    async list() {
      calls.list++;
      return state.list.map((id) => ({ id, status: 'running', updatedAt: 1, runs: 1 }));
    },
  } as unknown as DashboardLiveReads;
  return { client, calls };
}

/** A store that sends no notifications. */
const noNotices = { listen: async () => null };
const noWorker = { worker: { enabled: false } };

describe('DashboardLive', () => {
  it('ends a stream opened after shutdown at once, so a page that reconnects meanwhile does not hold the server open', () => {
    vi.useFakeTimers();
    const live = new DashboardLive(
      new WorkflowEvents(),
      reads({ list: [] }).client,
      { pageSize: 5 },
      noNotices,
      noWorker,
    );
    live.onModuleDestroy();
    let completed = false;
    const messages: unknown[] = [];
    const subscription = live
      .stream(null)
      .subscribe({ next: (m) => messages.push(m), complete: () => (completed = true) });
    vi.advanceTimersByTime(60_000);
    subscription.unsubscribe();
    expect(messages).toEqual([]);
    expect(completed).toBe(true);
  });

  it('ends the streams open at shutdown', () => {
    vi.useFakeTimers();
    const live = new DashboardLive(
      new WorkflowEvents(),
      reads({ list: [] }).client,
      { pageSize: 5 },
      noNotices,
      noWorker,
    );
    let completed = false;
    live.stream('x').subscribe({ complete: () => (completed = true) });
    live.onModuleDestroy();
    expect(completed).toBe(true);
  });

  it('tells an instance page when the store shows the instance changed (work of another process), reading it once a second while open', async () => {
    vi.useFakeTimers();
    const state: { x?: { status: string; updatedAt: number }; list: string[] } = {
      x: { status: 'running', updatedAt: 1 },
      list: [],
    };
    const { client, calls } = reads(state);
    const live = new DashboardLive(new WorkflowEvents(), client, { pageSize: 5 }, noNotices, noWorker);
    const messages: unknown[] = [];
    const first = live.stream({ id: 'x' }).subscribe((m) => messages.push(m));
    const second = live.stream({ id: 'x' }).subscribe(() => undefined);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(messages).toEqual([]);
    // One read at the start and one a second after, however many pages show it.
    expect(calls.getStatus).toBe(3);
    state.x = { status: 'running', updatedAt: 2 };
    await vi.advanceTimersByTimeAsync(1_000);
    expect(messages).toEqual([{ type: 'workflow', data: { event: 'changed', id: 'x' } }]);
    state.x = undefined;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(messages).toHaveLength(2);
    first.unsubscribe();
    second.unsubscribe();
    const reads_ = calls.getStatus;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls.getStatus).toBe(reads_);
    live.onModuleDestroy();
  });

  it("tells a list page when the store shows the list's first page changed", async () => {
    vi.useFakeTimers();
    const state = { list: ['a'] };
    const { client } = reads(state);
    const live = new DashboardLive(new WorkflowEvents(), client, { pageSize: 5 }, noNotices, noWorker);
    const messages: unknown[] = [];
    const subscription = live.stream({ list: {} }).subscribe((m) => messages.push(m));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(messages).toEqual([]);
    state.list = ['b', 'a'];
    await vi.advanceTimersByTimeAsync(1_000);
    expect(messages).toEqual([{ type: 'workflow', data: { event: 'changed' } }]);
    subscription.unsubscribe();
    live.onModuleDestroy();
  });
});

describe('DashboardChanges', () => {
  it('reports a read that fails and keeps polling', async () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    const changes = new DashboardChanges(1_000, (error) => errors.push(error));
    let n = 0;
    const seen: number[] = [];
    const subscription = changes
      .watch('k', async () => {
        n++;
        if (n === 2) throw new Error('store down');
        return String(n > 3 ? 'later' : 'first');
      })
      .subscribe(() => seen.push(n));
    await vi.advanceTimersByTimeAsync(4_000);
    expect(errors).toHaveLength(1);
    expect(seen).toEqual([4]);
    subscription.unsubscribe();
    changes.stop();
  });

  it("reads at once on the store's notices (at most once per 250 ms), and unsubscribes from them once nothing is watched", async () => {
    vi.useFakeTimers();
    let nudge: (() => void) | null = null;
    let unsubscribed = 0;
    const changes = new DashboardChanges(1_000, undefined, async (listener) => {
      nudge = listener;
      return async () => void unsubscribed++;
    });
    let reads = 0;
    let value = 'a';
    const seen: string[] = [];
    const subscription = changes
      .watch('k', async () => {
        reads++;
        return value;
      })
      .subscribe(() => seen.push(value));
    await vi.advanceTimersByTimeAsync(0);
    expect(reads).toBe(1);
    value = 'b';
    nudge!();
    nudge!();
    await vi.advanceTimersByTimeAsync(0);
    expect({ reads, seen }).toEqual({ reads: 2, seen: ['b'] });
    await vi.advanceTimersByTimeAsync(300);
    nudge!();
    await vi.advanceTimersByTimeAsync(0);
    expect(reads).toBe(3);
    subscription.unsubscribe();
    await vi.advanceTimersByTimeAsync(0);
    expect(unsubscribed).toBe(1);
    changes.stop();
  });
});
