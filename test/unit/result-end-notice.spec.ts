// handle.result() and a store that notifies only the ends asked for (PostgreSQL): when it asks
// (after listening and a read that found the instance unfinished), when it does not (this process
// runs the instance and its events tell the end), and what it does when the ask finds the instance
// ended, or fails. Every case polls once an hour: only the path under test can resolve it in time.
import { Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { waitForResult, type InstanceResultSources } from '../../src/client/instance-result.js';
import type { WorkflowEvent } from '../../src/events/workflow-event.js';
import type { WorkflowInstanceDetails } from '../../src/storage/workflow-store.js';

/** Fake sources around one instance `i`: its status is what the test sets; ends are notified only once asked. */
function sources(options: { runningHere?: Promise<void>; ask?: (status: string) => Promise<boolean> } = {}) {
  const state = { status: 'running', asks: 0, reads: 0 };
  const events = new Subject<WorkflowEvent>();
  let listener: ((id: string | null) => void) | null = null;
  const source: InstanceResultSources = {
    read: async () => {
      state.reads++;
      return { id: 'i', status: state.status, output: 'out', error: null } as unknown as WorkflowInstanceDetails;
    },
    events,
    listenForEnds: async (l) => {
      listener = l;
      return async () => undefined;
    },
    requestEndNotice: async () => {
      state.asks++;
      return options.ask ? options.ask(state.status) : state.status !== 'completed';
    },
    whileRunningHere: () => options.runningHere ?? null,
    closing: new AbortController().signal,
    pollInterval: 3_600_000,
  };
  return {
    source,
    state,
    /** The LISTEN connection came back: ends may have been missed. */
    reconnected() {
      listener?.(null);
    },
    /**
     * The instance ends elsewhere (notified, since it was asked for) and is retried before the read
     * that the notification causes: a reopen clears the store's ask (migration 0005).
     */
    endedAndReopened() {
      if (state.asks > 0) listener?.('i');
      state.asks = 0;
    },
    /** The instance ends elsewhere: notified only when it was asked for. */
    endElsewhere() {
      state.status = 'completed';
      if (state.asks > 0) listener?.('i');
    },
    endHere() {
      state.status = 'completed';
      events.next({
        type: 'workflow-completed',
        id: 'i',
        workflow: 'w',
        version: 1,
        at: 0,
        output: 'out',
      } as WorkflowEvent);
    },
  };
}

const turns = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('handle.result() asking the store for the end', () => {
  it('asks once after listening and reading, and is woken by the notification', async () => {
    const { source, state, endElsewhere } = sources();
    const result = waitForResult(source, 'i', 5_000);
    await turns();
    expect(state).toMatchObject({ asks: 1, reads: 1 });
    endElsewhere();
    await expect(result).resolves.toBe('out');
    expect(state.asks).toBe(1);
  });

  it('does not ask while this process runs the instance and its execution ends it', async () => {
    let stopped!: () => void;
    const { source, state, endHere } = sources({ runningHere: new Promise((resolve) => (stopped = resolve)) });
    const result = waitForResult(source, 'i', 5_000);
    await turns();
    endHere();
    stopped();
    await expect(result).resolves.toBe('out');
    await turns();
    expect(state.asks).toBe(0);
  });

  it('asks once the execution here stops without ending the instance, and hears the end from elsewhere', async () => {
    let stopped!: () => void;
    const { source, state, endElsewhere } = sources({ runningHere: new Promise((resolve) => (stopped = resolve)) });
    const result = waitForResult(source, 'i', 5_000);
    await turns();
    expect(state.asks).toBe(0);
    stopped();
    await turns();
    expect(state.asks).toBe(1);
    endElsewhere();
    await expect(result).resolves.toBe('out');
  });

  it('asks again after a reconnection (a server that restarted may have lost the ask)', async () => {
    const { source, state, reconnected, endElsewhere } = sources();
    const result = waitForResult(source, 'i', 5_000);
    await turns();
    expect(state).toMatchObject({ asks: 1, reads: 1 });
    reconnected();
    await turns();
    expect(state).toMatchObject({ asks: 2, reads: 2 });
    endElsewhere();
    await expect(result).resolves.toBe('out');
  });

  it('asks again when a notified end is found reopened (a retry cleared the ask), and hears the next end', async () => {
    const { source, state, endedAndReopened, endElsewhere } = sources();
    const result = waitForResult(source, 'i', 2_000);
    await turns();
    expect(state).toMatchObject({ asks: 1, reads: 1 });
    endedAndReopened();
    await turns();
    expect(state).toMatchObject({ asks: 1, reads: 2 });
    endElsewhere();
    await expect(result).resolves.toBe('out');
  });

  it("asks when the end told by this process's events is found reopened, and hears the next end from elsewhere", async () => {
    let stopped!: () => void;
    const { source, state, endHere, endElsewhere } = sources({
      runningHere: new Promise((resolve) => (stopped = resolve)),
    });
    const result = waitForResult(source, 'i', 2_000);
    await turns();
    endHere();
    // Retried before the read the end's event causes; the next run is elsewhere.
    state.status = 'running';
    stopped();
    await turns();
    expect(state.asks).toBe(1);
    endElsewhere();
    await expect(result).resolves.toBe('out');
  });

  it('reads again at once when the ask finds the instance ended after the read', async () => {
    const fake = sources({
      ask: async () => {
        // The end commits between the read and the ask: the store says it will notify nothing.
        fake.state.status = 'completed';
        return false;
      },
    });
    await expect(waitForResult(fake.source, 'i', 5_000)).resolves.toBe('out');
    expect(fake.state).toMatchObject({ asks: 1, reads: 2 });
  });

  it('polls at most every 500 ms while the ask fails, and asks again at each read', async () => {
    const fake = sources({ ask: async () => Promise.reject(new Error('connection lost')) });
    const started = Date.now();
    const result = waitForResult(fake.source, 'i', 5_000);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(fake.state.asks).toBe(2);
    fake.endElsewhere();
    await expect(result).resolves.toBe('out');
    expect(Date.now() - started).toBeLessThan(1_500);
  });
});
