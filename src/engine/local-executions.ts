import { InFlight } from '../leased-loop/in-flight.js';
import type { WorkflowExecution } from './workflow-execution.js';

/** A caller of `whileRunning()`, told when the execution of `id` here stops standing for it. */
interface Waiter {
  id: string;
  resolve: () => void;
}

/**
 * The executions running in this process, and who waits for one of them to stop standing for its
 * instance here (`whileRunning()`): a `handle.result()` in this process learns of the end from this
 * process's events while the execution lasts, and must ask the store after. Both kept in arrays
 * (`InFlight`): few at a time, and no long-lived `Map` whose rehashed tables keep ended executions.
 */
export class LocalExecutions {
  private readonly running = new InFlight<WorkflowExecution>();
  private readonly waiters = new InFlight<Waiter>();

  /** The newest execution of `id` running here. */
  get(id: string): WorkflowExecution | undefined {
    return this.running.findLast((exec) => exec.instance.id === id);
  }

  /**
   * The shutdown signals executions run under, each heard by one listener that interrupts the
   * executions running under it (`exec.shutdown`): a listener per execution would cost an add and a
   * remove each, and past ten at once Node warns of a leak that isn't one.
   */
  private readonly shutdowns = new WeakSet<AbortSignal>();

  hearShutdown(signal: AbortSignal): void {
    if (this.shutdowns.has(signal)) return;
    this.shutdowns.add(signal);
    signal.addEventListener(
      'abort',
      () => {
        for (const exec of [...this.running]) if (exec.shutdown === signal) exec.interrupt('shutdown');
      },
      { once: true },
    );
  }

  add(exec: WorkflowExecution): void {
    this.running.add(exec);
  }

  /** `exec` ended: it goes, and unless another execution of its instance runs here, the waiters are told. */
  delete(exec: WorkflowExecution): void {
    if (this.running.delete(exec) && this.get(exec.instance.id) === undefined) this.release(exec.instance.id);
  }

  /**
   * When an execution of `id` runs here under a lease it still holds (by the local clock), resolves
   * once it no longer stands for the instance here (`delete()`, or `release()` when shutdown lets
   * it go); `null` when none does.
   */
  whileRunning(id: string): Promise<void> | null {
    const exec = this.get(id);
    if (exec === undefined || exec.leaseLapsed) return null;
    return new Promise((resolve) => this.waiters.add({ id, resolve }));
  }

  /** Tells `id`'s waiters that its execution here no longer stands for it. */
  release(id: string): void {
    if (this.waiters.size === 0) return;
    for (const waiter of [...this.waiters]) {
      if (waiter.id !== id) continue;
      this.waiters.delete(waiter);
      waiter.resolve();
    }
  }
}
