import type { WorkflowJournalEntry, WorkflowJournalKind } from '../storage/workflow-instance.js';
import type { WorkflowContext } from './workflow-context.js';

/** The context methods a replay follows, and the journal kind each records. */
const FOLLOWED: ReadonlyArray<[keyof WorkflowContext, WorkflowJournalKind]> = [
  ['step', 'step'],
  ['transaction', 'step'],
  ['sleep', 'sleep'],
  ['sleepUntil', 'sleep'],
  ['waitForSignal', 'signal'],
  ['startChild', 'child'],
  ['executeChild', 'child'],
  ['waitForCallback', 'signal'],
];

/** One operation the code reached during a replay. */
interface Reached {
  name: string;
  kind: WorkflowJournalKind;
  /** Reached while another operation was still in flight, or another was reached while it was: a `Promise.all` branch. */
  parallel: boolean;
}

/** What a replay's trail saw that the journal does not match, first of each kind. */
export interface TrailFindings {
  /** The first operation reached that the journal lacks. */
  firstNew: Reached | null;
  /** The first name reached as another kind than the journal recorded. */
  kindChanged: { name: string; recorded: WorkflowJournalKind; reached: WorkflowJournalKind } | null;
  /** The first name reached twice. */
  reused: string | null;
  /** The first operation reached, in code that runs one thing at a time, after one the journal recorded later. */
  order: { name: string; after: string } | null;
  /** The first `deprecatePatch()` refused. */
  deprecated: string | null;
}

/**
 * The context a replay hands to `run()`: the execution's own, with each operation's name noted as
 * the code reaches it, so a replay can say which entry differs and why (a new operation where the
 * journal has another, a changed kind, a changed order). Order is judged only between operations
 * reached one at a time: in `Promise.all` branches the journal's order is the order in which the
 * operations finished, which a replay can't know.
 */
export class ReplayTrail {
  readonly context: WorkflowContext;
  private readonly reached: Reached[] = [];
  private readonly inFlight = new Set<Reached>();
  private readonly seen = new Set<string>();
  private reused: string | null = null;
  private deprecated: string | null = null;

  constructor(
    inner: WorkflowContext,
    private readonly journal: ReadonlyMap<string, WorkflowJournalEntry>,
    /** Journal names in first-write order, by position (compensations and markers left out). */
    private readonly positions: ReadonlyMap<string, number>,
  ) {
    const context = Object.create(inner) as Record<string, unknown>;
    for (const [method, kind] of FOLLOWED) {
      const call = inner[method] as (...args: unknown[]) => Promise<unknown>;
      context[method] = (...args: unknown[]) => this.follow(String(args[0]), kind, () => call(...args));
    }
    context.deprecatePatch = (patchId: string) => {
      try {
        inner.deprecatePatch(patchId);
      } catch (error) {
        this.deprecated ??= patchId;
        throw error;
      }
    };
    this.context = context as unknown as WorkflowContext;
  }

  private follow(name: string, kind: WorkflowJournalKind, call: () => Promise<unknown>): Promise<unknown> {
    if (this.seen.has(name)) this.reused ??= name;
    this.seen.add(name);
    const reached: Reached = { name, kind, parallel: this.inFlight.size > 0 };
    for (const other of this.inFlight) other.parallel = true;
    this.reached.push(reached);
    this.inFlight.add(reached);
    const promise = call();
    // Registered before the workflow's own await on it, so the operation is out of flight before
    // the code after it runs.
    const settled = () => void this.inFlight.delete(reached);
    promise.then(settled, settled);
    return promise;
  }

  findings(): TrailFindings {
    let firstNew: Reached | null = null;
    let kindChanged: TrailFindings['kindChanged'] = null;
    let order: TrailFindings['order'] = null;
    let latest: { name: string; position: number } | null = null;
    for (const reached of this.reached) {
      const entry = this.journal.get(reached.name);
      if (!entry) {
        firstNew ??= reached;
        continue;
      }
      if (entry.kind !== reached.kind)
        kindChanged ??= { name: reached.name, recorded: entry.kind, reached: reached.kind };
      const position = this.positions.get(reached.name);
      if (reached.parallel || position === undefined) continue;
      if (latest !== null && position < latest.position) order ??= { name: reached.name, after: latest.name };
      if (latest === null || position > latest.position) latest = { name: reached.name, position };
    }
    return { firstNew, kindChanged, reused: this.reused, order, deprecated: this.deprecated };
  }
}
