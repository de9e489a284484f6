import { afterEach, describe, expect, it, vi } from 'vitest';
import { DashboardLive } from '../../src/dashboard/dashboard-live.js';
import { WorkflowEvents } from '../../src/events/workflow-events.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('DashboardLive', () => {
  it('ends a stream opened after shutdown at once, so a page that reconnects meanwhile does not hold the server open', () => {
    vi.useFakeTimers();
    const live = new DashboardLive(new WorkflowEvents());
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
    const live = new DashboardLive(new WorkflowEvents());
    let completed = false;
    live.stream('x').subscribe({ complete: () => (completed = true) });
    live.onModuleDestroy();
    expect(completed).toBe(true);
  });
});
