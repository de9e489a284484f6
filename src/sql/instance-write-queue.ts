/**
 * Keeps one instance's writes in call order: each runs once every earlier one of the same instance
 * settled, even when they take different paths (a batch, or a transaction of their own that takes
 * a signal lock). Otherwise a suspension could land before a journal write made just before it, and
 * that write would find the lease released. Writes of different instances never wait for each other.
 */
export class InstanceWriteQueue {
  /** Per instance with writes in progress: settles when its last write did. */
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(id);
    const result = previous ? previous.then(fn) : fn();
    // Settles (never rejects) once `result` did, having forgotten the instance unless a later write
    // queued behind it: that one's tail is the instance's now.
    const settled = () => {
      if (this.tails.get(id) === tail) this.tails.delete(id);
    };
    const tail: Promise<void> = result.then(settled, settled);
    this.tails.set(id, tail);
    return result;
  }
}
