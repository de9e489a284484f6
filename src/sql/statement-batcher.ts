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

/** What a `StatementBatcher` sends, and how many items at once. */
export interface StatementBatcherOptions<In, Out> {
  /** Sends a batch as one statement (or transaction): one result per item, in order. */
  send(items: In[]): Promise<Out[]>;
  /**
   * Sends a batch of one item, when the store has a statement for a lone item: the plain
   * single-row statement is cheaper for the server than a batch's of one row.
   */
  single?(item: In): Promise<Out>;
  /** The most items one statement carries. Default 500. */
  max?: number;
  /** Batches in flight at once (on as many connections). Default 1. */
  parallel?: number;
  /** A bound on each batch's weight (a server that refuses too large a statement). */
  bound?: BatchWeight<In>;
}

/**
 * Turns calls made together into one statement per batch (group commit done by the store): a batch
 * leaves as soon as the one before it returned, so a lone call waits for nothing, while under load
 * many calls share one round trip and one commit. A batch of one goes through `single` when there
 * is one. Either answers for the whole batch; if it throws, every call of the batch fails with its
 * error. Calls that must keep their order (one instance's writes) are ordered by the caller, never
 * sent together.
 */
export class StatementBatcher<In, Out> {
  private readonly queue: Array<Waiting<In, Out>> = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly max: number;
  private readonly parallel: number;

  constructor(private readonly options: StatementBatcherOptions<In, Out>) {
    this.max = options.max ?? 500;
    this.parallel = options.parallel ?? 1;
  }

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
    const { queue } = this;
    const { bound } = this.options;
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
      const { send, single } = this.options;
      const results =
        batch.length === 1 && single
          ? [await single(batch[0]!.item)]
          : await send(batch.map((waiting) => waiting.item));
      batch.forEach((waiting, index) => waiting.resolve(results[index]!));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    } finally {
      this.inFlight--;
      this.pump();
    }
  }
}
