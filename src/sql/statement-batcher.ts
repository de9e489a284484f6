/**
 * A bound on a batch's size besides its count: `weight` of each item (its payloads' text length,
 * say), at most `max` in all. An item heavier than `max` goes in a batch of its own.
 */
export interface BatchWeight<In> {
  weight(item: In): number;
  max: number;
}

interface Waiting<In, Out> {
  item: In;
  resolve(result: Out): void;
  reject(error: unknown): void;
}

/**
 * Turns calls made together into one statement per batch (group commit done by the store): a batch
 * leaves as soon as the one before it returned, so a lone call waits for nothing, while under load
 * many calls share one round trip and one commit. `send` answers for the whole batch, one result
 * per item in order; if it throws, every call of the batch fails with its error. Calls that must
 * keep their order (one instance's writes) are ordered by the caller, never sent together.
 */
export class StatementBatcher<In, Out> {
  private readonly queue: Array<Waiting<In, Out>> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly send: (items: In[]) => Promise<Out[]>,
    /** The most items one statement carries. */
    private readonly max = 500,
    /** Batches in flight at once (on as many connections). */
    private readonly parallel = 1,
    /** Optional: a bound on each batch's weight (a server that refuses too large a statement). */
    private readonly bound?: BatchWeight<In>,
  ) {}

  add(item: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      // Calls made in the same turn (`Promise.all` over many) join the first batch.
      if (!this.scheduled && this.inFlight < this.parallel) {
        this.scheduled = true;
        queueMicrotask(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  private pump(): void {
    while (this.queue.length > 0 && this.inFlight < this.parallel) void this.run(this.queue.splice(0, this.next()));
  }

  /** How many of the queue's first items the next batch takes: up to `max`, and within the bound's weight. */
  private next(): number {
    const { bound, queue } = this;
    const count = Math.min(queue.length, this.max);
    if (!bound) return count;
    let total = bound.weight(queue[0]!.item);
    for (let index = 1; index < count; index++) {
      total += bound.weight(queue[index]!.item);
      if (total > bound.max) return index;
    }
    return count;
  }

  private async run(batch: Array<Waiting<In, Out>>): Promise<void> {
    this.inFlight++;
    try {
      const results = await this.send(batch.map((waiting) => waiting.item));
      batch.forEach((waiting, index) => waiting.resolve(results[index]!));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    } finally {
      this.inFlight--;
      this.pump();
    }
  }
}
