/**
 * A set of the few objects in flight at a time (the items a loop runs, the executions of a process,
 * what waits for the turn's end), in insertion order, kept in an array: `add()`, `delete()` and
 * `has()` walk it, which costs nothing at the sizes of a worker's slots.
 *
 * Not a `Set` or a `Map` because of what V8 does with one that lives long while its entries come
 * and go: each time it rehashes its table (deletions empty it, additions fill it), the old table
 * keeps the entries it held and a link to the new one. Once one of those tables is in the old
 * generation, the chain of tables after it, with every entry each held, survives young-generation
 * collections until the next full one. In a `drain()` of the in-memory store, any one such `Set`
 * or `Map` holding executions was enough to have most of every execution promoted and collected
 * in the old generation (bench/RESULTS.md, "the first drain() and the old generation").
 */
export class InFlight<T> implements Iterable<T> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  /** Adds `item` at the end, unless it is in already. */
  add(item: T): void {
    if (!this.items.includes(item)) this.items.push(item);
  }

  /** Removes `item`; returns whether it was in. The others keep their order. */
  delete(item: T): boolean {
    const index = this.items.indexOf(item);
    if (index < 0) return false;
    this.items.splice(index, 1);
    return true;
  }

  has(item: T): boolean {
    return this.items.includes(item);
  }

  /** The last item (the newest) that `test` accepts, or `undefined`. */
  findLast(test: (item: T) => boolean): T | undefined {
    for (let index = this.items.length - 1; index >= 0; index--) if (test(this.items[index]!)) return this.items[index];
    return undefined;
  }

  /** Empties it and returns what it held, in order. */
  takeAll(): T[] {
    return this.items.splice(0);
  }

  [Symbol.iterator](): IterableIterator<T> {
    return this.items[Symbol.iterator]();
  }
}
