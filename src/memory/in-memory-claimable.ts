import { hasLiveLease } from './in-memory-list.js';
import { UNFINISHED_STATUSES, type WorkflowInstance, type WorkflowStatus } from '../storage/workflow-instance.js';

const UNFINISHED: ReadonlySet<WorkflowStatus> = new Set(UNFINISHED_STATUSES);

/**
 * One place of an instance in the due queue, with the keys it was placed by (an instance's fields
 * change under the heap; its entry's never do while it is in one).
 */
interface Entry {
  readonly instance: WorkflowInstance;
  readonly wakeAt: number;
  readonly priority: number;
  readonly createdAt: number;
  readonly id: string;
  /** Its concurrency key: the claim takes due instances across keys in turn. */
  readonly key: string | null;
  /** When the entry may be due: its `wakeAt`, or when the lease it was parked behind ends. */
  at: number;
}

/**
 * The due queue of `InMemoryWorkflowStore`: what a claim could take, so a claim costs what it takes
 * (times a logarithm, plus one look per concurrency key), not the backlog's size. A heap `waiting`
 * by the time an entry may be due (its `wakeAt`, or the end of a lease it is parked behind), and
 * `ready`: one heap per priority and concurrency key, each in claim order (`wakeAt`, `createdAt`,
 * id), which a claim fills from `waiting` up to its `now` and takes from across the keys in turn.
 *
 * Each instance has at most one current entry; the store calls `update()` whenever it changes an
 * instance's status or `wakeAt`, which replaces the entry when its place changed. A replaced entry
 * stays in its heap and is dropped when it comes to the top (or when the heaps are compacted), and
 * every entry taken is checked against its instance again, so a claim never takes a deleted,
 * finished, rescheduled or leased instance whatever the heaps still hold.
 */
export class ClaimableInstances {
  private readonly current = new Map<WorkflowInstance, Entry>();
  /** Instances that took a lease and may not have released it (finished ones too), for limits' counts. */
  private readonly holders = new Set<WorkflowInstance>();
  /** Instances that went `suspended` (some left it since: `suspended()` drops those), for signals. */
  private readonly suspendedSet = new Set<WorkflowInstance>();
  private readonly waiting = new Heap<Entry>((a, b) => a.at < b.at);
  private readonly ready = new ReadyGroups();
  /** Entries `due()` took out of `ready` for the claim under way, until `leased()` ends it. */
  private readonly found = new Set<Entry>();

  /** The unfinished instances with a `wakeAt` (the only ones that can be due). */
  instances(): Iterable<WorkflowInstance> {
    return this.current.keys();
  }

  /**
   * The instances that may hold a lease: every one that does, and some whose lease ended. A
   * finished instance still holds one until a write releases it, as in the SQL stores.
   */
  leaseHolders(): Iterable<WorkflowInstance> {
    for (const instance of this.holders) if (instance.leaseToken === null) this.holders.delete(instance);
    return this.holders;
  }

  /**
   * Ends the leases of `workflows`' instances that lapsed at `now` (clears their token and
   * `leaseUntil`): a claim under concurrency limits does so before it counts their slots as free,
   * so a stalled holder can't renew one into a slot beside what the claim leases.
   */
  endLapsedLeases(workflows: ReadonlySet<string>, now: number): void {
    if (workflows.size === 0) return;
    for (const instance of [...this.leaseHolders()]) {
      if (!workflows.has(instance.workflow) || instance.leaseUntil === null || instance.leaseUntil >= now) continue;
      instance.leaseToken = null;
      instance.leaseUntil = null;
      this.update(instance);
    }
  }

  /**
   * The suspended instances, which a signal may wake: a signal looks at these instead of every
   * instance. Every change to `suspended` goes through `update()`; changes away are found here.
   */
  suspended(): WorkflowInstance[] {
    const found: WorkflowInstance[] = [];
    for (const instance of this.suspendedSet) {
      if (instance.status === 'suspended') found.push(instance);
      else this.suspendedSet.delete(instance);
    }
    return found;
  }

  /** Places `instance` again after its status or `wakeAt` changed (or it was created). */
  update(instance: WorkflowInstance): void {
    // A released lease leaves the set here, so it never holds every instance that ever ran.
    if (instance.leaseToken !== null) this.holders.add(instance);
    else this.holders.delete(instance);
    if (instance.status === 'suspended') this.suspendedSet.add(instance);
    const { wakeAt } = instance;
    if (!UNFINISHED.has(instance.status) || wakeAt === null) {
      this.current.delete(instance);
      return;
    }
    const entry = this.current.get(instance);
    // Still in place (a parked entry is not: its lease may have been released without a new wakeAt).
    if (entry && entry.wakeAt === wakeAt && entry.at === wakeAt) return;
    const { priority, createdAt, id, concurrencyKey: key } = instance;
    this.place({ instance, wakeAt, priority, createdAt, id, key, at: wakeAt });
  }

  remove(instance: WorkflowInstance): void {
    this.current.delete(instance);
    this.holders.delete(instance);
    this.suspendedSet.delete(instance);
  }

  /**
   * Ends the claim `due()` found candidates for: parks the ones it leased until their leases end,
   * so later claims pass over them without looking (a renewed lease parks them again when the
   * first end comes), and puts the others back in claim order.
   */
  leased(instances: readonly WorkflowInstance[]): void {
    for (const instance of instances) {
      this.holders.add(instance);
      const entry = this.current.get(instance);
      if (!entry || !this.found.delete(entry)) continue;
      if (instance.leaseUntil === null) {
        this.ready.push(entry);
        continue;
      }
      entry.at = instance.leaseUntil;
      this.waiting.push(entry);
    }
    this.restore();
  }

  /**
   * The unfinished instances due at `now` that `accepts` takes, in fair claim order: priority
   * first; within a priority, across concurrency keys in turn (the instances without a key are one
   * more key), each turn in claim order (`wakeAt`, `createdAt`, id). A key's instances running
   * (`running(key)`) count as turns it already had: its oldest due instance is in turn
   * `running + 1`, its next in the turn after. With `top`, only the first `top` of that order, for
   * the cost of those (plus one look per key and the entries passed over on the way), whatever else
   * is due.
   */
  due(
    now: number,
    accepts: (instance: WorkflowInstance) => boolean,
    top = Infinity,
    running: (key: string | null) => number = () => 0,
  ): WorkflowInstance[] {
    this.restore();
    this.promote(now);
    const found: WorkflowInstance[] = [];
    const passed: Entry[] = [];
    /** The next entry of `group` a claim at `now` may take, or `undefined` when it has none. */
    const next = (group: Heap<Entry>): Entry | undefined => {
      while (group.size > 0) {
        const entry = group.pop()!;
        if (this.current.get(entry.instance) !== entry) continue;
        const { instance } = entry;
        // Every change of status or wakeAt goes through update(); should one not, place it again now.
        if (instance.wakeAt !== entry.wakeAt || !UNFINISHED.has(instance.status)) {
          this.update(instance);
          continue;
        }
        // Not due at this claim's `now` (an earlier `now` than a past claim's), or not this claim's.
        if (entry.wakeAt > now || !accepts(instance)) {
          passed.push(entry);
          continue;
        }
        return entry;
      }
      return undefined;
    };
    for (const groups of this.ready.byPriority()) {
      // Each group with the turn of its next pick; a group leaves once it has nothing due. A lone
      // group takes no turns, so its running instances need no count.
      let active = groups.map(({ key, heap }) => ({ heap, turn: (groups.length > 1 ? running(key) : 0) + 1 }));
      while (found.length < top && active.length > 0) {
        const turn = Math.min(...active.map((group) => group.turn));
        const round: Array<{ entry: Entry; group: (typeof active)[number] }> = [];
        const later = active.filter((group) => group.turn > turn);
        for (const group of active) {
          if (group.turn > turn) continue;
          const entry = next(group.heap);
          if (entry) round.push({ entry, group });
        }
        round.sort((a, b) => claimOrder(a.entry, b.entry));
        for (const { entry, group } of round) {
          if (found.length < top) {
            this.found.add(entry);
            found.push(entry.instance);
          } else {
            group.heap.push(entry);
          }
          group.turn += 1;
        }
        active = [...round.map(({ group }) => group), ...later];
      }
      if (found.length >= top) break;
    }
    for (const entry of passed) this.ready.push(entry);
    this.ready.dropEmpty();
    return found;
  }

  /** Puts back in claim order what `due()` found and no claim leased. */
  private restore(): void {
    for (const entry of this.found) this.ready.push(entry);
    this.found.clear();
  }

  /** Moves what may be due at `now` from `waiting` to `ready`, parking again what is still leased. */
  private promote(now: number): void {
    while (this.waiting.size > 0 && this.waiting.peek()!.at <= now) {
      const entry = this.waiting.pop()!;
      if (this.current.get(entry.instance) !== entry) continue;
      const { instance } = entry;
      if (hasLiveLease(instance, now) && instance.leaseUntil! > now) {
        entry.at = instance.leaseUntil!;
        this.waiting.push(entry);
      } else {
        this.ready.push(entry);
      }
    }
  }

  private place(entry: Entry): void {
    this.current.set(entry.instance, entry);
    this.waiting.push(entry);
    // Replaced entries stay in the heaps until they reach the top; rebuild before they outnumber
    // the live ones (a parked entry of an instance finished under its lease waits out the lease).
    if (this.waiting.size + this.ready.size > 2 * this.current.size + 1024) {
      const live = (entry: Entry) => this.current.get(entry.instance) === entry;
      this.waiting.keep(live);
      this.ready.keep(live);
    }
  }
}

function claimOrder(a: Entry, b: Entry): number {
  return (
    a.priority - b.priority ||
    a.wakeAt - b.wakeAt ||
    a.createdAt - b.createdAt ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}

/** The ready entries, one heap per priority and concurrency key, each in claim order. */
class ReadyGroups {
  private readonly groups = new Map<number, Map<string | null, Heap<Entry>>>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(entry: Entry): void {
    let keys = this.groups.get(entry.priority);
    if (!keys) this.groups.set(entry.priority, (keys = new Map()));
    let group = keys.get(entry.key);
    if (!group) keys.set(entry.key, (group = new Heap<Entry>((a, b) => claimOrder(a, b) < 0)));
    group.push(entry);
    this.count++;
  }

  /**
   * Each priority's groups, lowest priority first. What a caller pops from a group it pushes back
   * or keeps (a claim's find): `dropEmpty()` then recounts and forgets the empty groups.
   */
  byPriority(): Array<Array<{ key: string | null; heap: Heap<Entry> }>> {
    return [...this.groups.keys()]
      .sort((a, b) => a - b)
      .map((priority) => [...this.groups.get(priority)!].map(([key, heap]) => ({ key, heap })));
  }

  dropEmpty(): void {
    let count = 0;
    for (const [priority, keys] of this.groups) {
      for (const [key, group] of keys) {
        if (group.size === 0) keys.delete(key);
        count += group.size;
      }
      if (keys.size === 0) this.groups.delete(priority);
    }
    this.count = count;
  }

  /** Keeps only the entries `keep` accepts. */
  keep(keep: (entry: Entry) => boolean): void {
    for (const keys of this.groups.values()) for (const group of keys.values()) group.keep(keep);
    this.dropEmpty();
  }
}

/** A binary min-heap under `before`. */
class Heap<T> {
  private items: T[] = [];

  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const { items, before } = this;
    let index = items.length;
    items.push(item);
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!before(item, items[parent]!)) break;
      items[index] = items[parent]!;
      index = parent;
    }
    items[index] = item;
  }

  pop(): T | undefined {
    const { items } = this;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0) this.sink(last!, 0);
    return top;
  }

  /** Keeps only the items `keep` accepts, in heap order again. */
  keep(keep: (item: T) => boolean): void {
    const items = this.items.filter(keep);
    this.items = items;
    for (let index = (items.length >> 1) - 1; index >= 0; index--) this.sink(items[index]!, index);
  }

  private sink(item: T, from: number): void {
    const { items, before } = this;
    const length = items.length;
    let index = from;
    for (;;) {
      let child = 2 * index + 1;
      if (child >= length) break;
      if (child + 1 < length && before(items[child + 1]!, items[child]!)) child += 1;
      if (!before(items[child]!, item)) break;
      items[index] = items[child]!;
      index = child;
    }
    items[index] = item;
  }
}
