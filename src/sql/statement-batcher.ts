interface Waiting<In, Out> {
  item: In;
  resolve(result: Out): void;
  reject(error: unknown): void;
}

/**
 * Turns calls made together into one statement per batch (group commit done by the store): a batch
 * leaves as soon as the one before it returned, so a lone call waits for nothing, while under load
 * many calls share one round trip and one commit. `send` answers for the whole batch, one result
 * per item in order; if it throws, every call of the batch fails with its error.
 */
export class StatementBatcher<In, Out> {
  private readonly queue: Array<Waiting<In, Out>> = [];
  private inFlight = 0;
  private scheduled = false;
  /** Keys of the items in batches in flight: a later item with one of them waits, so calls keep their order. */
  private readonly busy = new Set<string>();

  constructor(
    private readonly send: (items: In[]) => Promise<Out[]>,
    /** The most items one statement carries. */
    private readonly max = 500,
    /** Items of one key never share a batch or run in two at once: each waits for the one before it. */
    private readonly keyOf?: (item: In) => string,
    /** Batches in flight at once (on as many connections). */
    private readonly parallel = 1,
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
    while (this.queue.length > 0 && this.inFlight < this.parallel) {
      const batch = this.take();
      if (batch.length === 0) return;
      void this.run(batch);
    }
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
      if (this.keyOf) for (const waiting of batch) this.busy.delete(this.keyOf(waiting.item));
      this.pump();
    }
  }

  private take(): Array<Waiting<In, Out>> {
    if (!this.keyOf) return this.queue.splice(0, this.max);
    // Skipped: a key already in this batch or in flight, and every later item of a skipped key.
    const skipped = new Set<string>();
    const batch: Array<Waiting<In, Out>> = [];
    for (let index = 0; index < this.queue.length && batch.length < this.max; ) {
      const key = this.keyOf(this.queue[index]!.item);
      if (this.busy.has(key) || skipped.has(key)) {
        skipped.add(key);
        index++;
        continue;
      }
      this.busy.add(key);
      skipped.add(key);
      batch.push(this.queue.splice(index, 1)[0]!);
    }
    return batch;
  }
}
