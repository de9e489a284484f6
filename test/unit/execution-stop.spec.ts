// ExecutionStop makes its AbortControllers only when something first reads a signal: a stop raised
// before that read must still be seen, with the same reason, as if the signal had been there all along.
import { describe, expect, it } from 'vitest';
import { ExecutionStop } from '../../src/engine/execution-stop.js';
import { WorkflowInterrupt } from '../../src/errors/workflow-interrupt.js';

const reasonOf = (signal: AbortSignal) => (signal.reason as WorkflowInterrupt).reason;

describe('ExecutionStop', () => {
  it('hands out an already aborted signal when the stop came before the first read, with the first interrupt as its reason', () => {
    const stop = new ExecutionStop({ cancelRequested: false, terminateRequested: false });
    expect(stop.request('cancel')).toBe(false);
    expect(stop.request('terminate')).toBe(true);
    const signal = stop.signal;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(WorkflowInterrupt);
    expect(reasonOf(signal)).toBe('cancel');
    expect(stop.signal).toBe(signal);
  });

  it('aborts a signal read before the stop, once, with the first interrupt', () => {
    const stop = new ExecutionStop({ cancelRequested: false, terminateRequested: false });
    const signal = stop.signal;
    const heard: string[] = [];
    signal.addEventListener('abort', () => heard.push(reasonOf(signal)));
    expect(signal.aborted).toBe(false);
    stop.request('shutdown');
    stop.request('lease-lost');
    expect(heard).toEqual(['shutdown']);
  });

  it('aborts at the check that finds a cancel flag from the claim, before any read', () => {
    const stop = new ExecutionStop({ cancelRequested: true, terminateRequested: false });
    expect(() => stop.check(false, () => false)).toThrow(WorkflowInterrupt);
    expect(reasonOf(stop.signal)).toBe('cancel');
  });

  it('rejects stopped() for a stop at once whether it came before or after the call, and never for a cancel', async () => {
    const before = new ExecutionStop({ cancelRequested: false, terminateRequested: false });
    before.request('terminate');
    before.request('lease-lost');
    await expect(before.stopped()).rejects.toMatchObject({ reason: 'terminate' });

    const after = new ExecutionStop({ cancelRequested: false, terminateRequested: false });
    const waiting = after.stopped();
    let settled = false;
    void waiting.catch(() => (settled = true));
    after.request('cancel');
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(settled).toBe(false);
    after.request('store-error');
    await expect(waiting).rejects.toMatchObject({ reason: 'store-error' });
    // A later stopped() gets the same first reason.
    await expect(after.stopped()).rejects.toMatchObject({ reason: 'store-error' });
  });

  it('aborts compensationSignal on what stops the compensations, never on a cancel or the deadline', () => {
    const stop = new ExecutionStop({ cancelRequested: false, terminateRequested: false });
    const signal = stop.compensationSignal;
    expect(() => stop.check(false, () => true)).toThrow(WorkflowInterrupt);
    stop.request('cancel');
    expect(stop.signal.aborted).toBe(true);
    expect(signal.aborted).toBe(false);
    stop.request('shutdown');
    expect(reasonOf(signal)).toBe('shutdown');
    stop.request('terminate');
    expect(reasonOf(signal)).toBe('shutdown');
    expect(stop.compensationSignal).toBe(signal);

    for (const reason of ['terminate', 'lease-lost', 'store-error'] as const) {
      const other = new ExecutionStop({ cancelRequested: true, terminateRequested: false });
      const late = other.compensationSignal;
      other.request(reason);
      expect(reasonOf(late)).toBe(reason);
    }
  });

  it('hands out an already aborted compensationSignal when the stop came first, or the claim found a terminate', () => {
    const stop = new ExecutionStop({ cancelRequested: false, terminateRequested: false });
    stop.request('lease-lost');
    expect(reasonOf(stop.compensationSignal)).toBe('lease-lost');
    const claimed = new ExecutionStop({ cancelRequested: true, terminateRequested: true });
    expect(reasonOf(claimed.compensationSignal)).toBe('terminate');
  });
});
