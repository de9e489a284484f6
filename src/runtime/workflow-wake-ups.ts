/**
 * "Something may be due now": raised by whatever makes work due in this process (a local start, a
 * signal, a cancel, a retry, a child started or ended, the store's notification, a manual clock
 * moving) and heard by the runtime, which looks for work at once instead of at its next poll. The
 * one way a wake-up travels; a provider of its own so the engine can raise it without holding the
 * runtime that drives it.
 */
export class WorkflowWakeUps {
  private readonly listeners = new Set<(id?: string) => void>();

  /** Tells every listener that work may be due; `id` names the one instance made due, when known (a store's notification). */
  kick(id?: string): void {
    for (const listener of this.listeners) listener(id);
  }

  /** Calls `listener` at every `kick()`; returns a function that stops it. */
  subscribe(listener: (id?: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
