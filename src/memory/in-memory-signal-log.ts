import type { NewWorkflowSignal, WorkflowSignalRecord } from '../storage/workflow-store.js';

interface LoggedSignal {
  record: WorkflowSignalRecord;
  /** The `(name, dedupeId)` index key, or `null` for a signal that never deduplicates. */
  dedupeKey: string | null;
}

/**
 * The signals of `InMemoryWorkflowStore`: ids, deduplication, lookups by name and exact key, and
 * purge. Records are kept as stored; the store copies them in and out.
 */
export class InMemorySignalLog {
  /** The highest id given out, or 0; purge never removes the newest signal, so it never goes back. */
  last = 0;
  /** Every signal in id order. */
  private log: LoggedSignal[] = [];
  /** Signals per name and exact key, in id order: what a wait can take. */
  private readonly topics = new Map<string, WorkflowSignalRecord[]>();
  private readonly dedupe = new Map<string, WorkflowSignalRecord>();

  /**
   * Stores `signal` under the next id, or returns the record stored earlier with its name and
   * `dedupeId` (`created: false`). `payload` is stored as given: pass a copy.
   */
  add(signal: NewWorkflowSignal): { record: WorkflowSignalRecord; created: boolean } {
    const dedupeKey = signal.dedupeId === null ? null : JSON.stringify([signal.name, signal.dedupeId]);
    const earlier = dedupeKey === null ? undefined : this.dedupe.get(dedupeKey);
    if (earlier) return { record: earlier, created: false };

    const record: WorkflowSignalRecord = {
      id: ++this.last,
      name: signal.name,
      key: signal.key,
      payload: signal.payload,
      createdAt: signal.now,
    };
    this.log.push({ record, dedupeKey });
    const topic = topicKey(record.name, record.key);
    const list = this.topics.get(topic);
    if (list) list.push(record);
    else this.topics.set(topic, [record]);
    if (dedupeKey !== null) this.dedupe.set(dedupeKey, record);
    return { record, created: true };
  }

  /** Signals named `name` with exactly `key` and `afterId < id <= upToId`, in id order. */
  find(name: string, key: string | null, afterId: number, upToId: number): WorkflowSignalRecord[] {
    const topic = this.topics.get(topicKey(name, key)) ?? [];
    return topic.filter((record) => record.id > afterId && record.id <= upToId);
  }

  /** Whether a signal named `name` with exactly `key` has an id above `afterId`. */
  hasAbove(name: string, key: string | null, afterId: number): boolean {
    return (this.topics.get(topicKey(name, key))?.at(-1)?.id ?? 0) > afterId;
  }

  /** Up to `limit` signals with ids above `afterId`, in id order (re-encryption pages through them). */
  page(afterId: number, limit: number): WorkflowSignalRecord[] {
    const out: WorkflowSignalRecord[] = [];
    for (const { record } of this.log) {
      if (out.length >= limit) break;
      if (record.id > afterId) out.push(record);
    }
    return out;
  }

  /** The newest `count` signals, newest first. */
  newest(count: number): WorkflowSignalRecord[] {
    const out: WorkflowSignalRecord[] = [];
    for (let index = this.log.length - 1; index >= 0 && out.length < count; index--) out.push(this.log[index]!.record);
    return out;
  }

  /** The signal with this id, or `undefined` (purged, or never stored). One record, shared by every index. */
  byId(id: number): WorkflowSignalRecord | undefined {
    return this.log.find(({ record }) => record.id === id)?.record;
  }

  /** Removes the signal stored with `name` and `dedupeId`, if any (`reopen`'s `retractSignal`); ids never go back. */
  retract(name: string, dedupeId: string): void {
    const dedupeKey = JSON.stringify([name, dedupeId]);
    const record = this.dedupe.get(dedupeKey);
    if (!record) return;
    this.dedupe.delete(dedupeKey);
    this.log = this.log.filter((logged) => logged.record !== record);
    const topic = topicKey(record.name, record.key);
    const left = this.topics.get(topic)!.filter((r) => r !== record);
    if (left.length > 0) this.topics.set(topic, left);
    else this.topics.delete(topic);
  }

  /**
   * Removes up to `limit` signals with `createdAt < before`, lowest id first, never the newest nor
   * one `keep` holds; returns how many. A removed signal's `dedupeId` no longer deduplicates.
   */
  purge(before: number, limit: number, keep: (record: WorkflowSignalRecord) => boolean): number {
    const newest = this.log.at(-1)?.record.id;
    const doomed = new Set<number>();
    const touched = new Set<string>();
    for (const { record, dedupeKey } of this.log) {
      if (doomed.size >= limit) break;
      if (record.createdAt >= before || record.id === newest || keep(record)) continue;
      doomed.add(record.id);
      touched.add(topicKey(record.name, record.key));
      if (dedupeKey !== null) this.dedupe.delete(dedupeKey);
    }
    if (doomed.size === 0) return 0;
    this.log = this.log.filter(({ record }) => !doomed.has(record.id));
    for (const topic of touched) {
      const left = this.topics.get(topic)!.filter((record) => !doomed.has(record.id));
      if (left.length > 0) this.topics.set(topic, left);
      else this.topics.delete(topic);
    }
    return doomed.size;
  }
}

function topicKey(name: string, key: string | null): string {
  return JSON.stringify([name, key]);
}
