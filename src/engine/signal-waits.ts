import { deserializeError, serializeError } from '../errors/serialize-error.js';
import { WorkflowSignalTimeoutError } from '../errors/workflow-signal-timeout.error.js';
import type { WorkflowWait } from '../signals/workflow-wait.js';
import { plainCopy } from '../storage/plain-copy.js';
import type { WorkflowSignalQuery, WorkflowSignalRecord } from '../storage/workflow-store.js';
import { parseDuration } from '../time/duration.js';
import type { Duration } from '../time/duration.js';
import type { OperationHost } from './execution-host.js';

/**
 * `ctx.waitForSignal()` for one execution (and how a child's result is awaited: an engine signal
 * named `$child-ended`). Takes the oldest signal above the instance's cursor, up to the
 * execution's, that no earlier wait of the same name and key took; else journals the wait and
 * parks on it until a signal or its timeout. "Earlier" is call order: waits of one name and key
 * that read at once (`Promise.all`) choose in the order they were called, not in the order the
 * store answers their reads (on a pool, any order), so the first called takes the oldest signal.
 */
export class SignalWaits {
  /** Per name and key, the highest signal id a wait of this execution took. */
  private taken: Map<string, number> | null = null; // made at the first signal taken
  /** Per name and key, the last wait of this execution still choosing its signal: the next one chooses after it. */
  private choosing: Map<string, Promise<void>> | null = null; // made at the first read

  constructor(
    private readonly host: OperationHost,
    private readonly read: (query: WorkflowSignalQuery) => Promise<WorkflowSignalRecord[]>,
  ) {}

  /** Waits under journal name `name` for `signal` with exactly `key` (`null`: sent without one). */
  async wait<T>(
    name: string,
    signal: string,
    key: string | null,
    timeout: Duration | undefined,
    engine: boolean,
  ): Promise<T> {
    const { host } = this;
    host.admitOperation(name, 'signal', engine);
    const entry = host.journalEntry(name);
    if (entry?.state === 'completed') {
      this.take(signal, key, entry.signalId ?? 0);
      return plainCopy(entry.value) as T;
    }
    if (entry?.state === 'failed') throw deserializeError(entry.error!);
    if (host.replayOnly) return host.suspendOperation({ wakeAt: null, wait: null });
    const now = host.now();
    const wakeAt = entry
      ? (entry.wakeAt ?? null)
      : timeout === undefined
        ? null
        : now + parseDuration(timeout, `timeout of wait "${name}"`);
    const wait = { name: signal, key };
    const k = waitKey(wait);
    const afterId = Math.max(host.instance.signalCursor, this.taken?.get(k) ?? 0);
    const choosing = (this.choosing ??= new Map());
    const before = choosing.get(k);
    let chosen!: () => void;
    const turn = new Promise<void>((resolve) => (chosen = resolve));
    choosing.set(k, turn);
    host.operationStarted();
    let found;
    try {
      const records = await this.read({ name: signal, key, afterId, upToId: host.signalCursor });
      // A parallel wait of the same name and key called before this one chooses first (its read
      // may answer later), then this one takes the oldest signal still free. Parking on a signal
      // that was already read would never be woken, since the suspension's check only looks above
      // the cursor.
      if (before) await before;
      const taken = this.taken?.get(k) ?? 0;
      found = records.find((record) => record.id > taken);
      if (found) this.take(signal, key, found.id);
    } finally {
      if (choosing.get(k) === turn) choosing.delete(k);
      chosen();
      host.operationSettled();
    }
    host.throwIfStopped();
    if (found) {
      const at = host.now();
      // The engine's own waits (a child's end) are no signal the application sent: telemetry reports
      // the application's signals only.
      if (!engine) host.observe.signalTaken(signal, at - found.createdAt);
      host.record({
        name,
        kind: 'signal',
        state: 'completed',
        value: found.payload,
        signal: wait,
        signalId: found.id,
        createdAt: entry?.createdAt ?? at,
        updatedAt: at,
      });
      // A copy: the code may change it in place before the entry is written.
      return plainCopy(found.payload) as T;
    }
    if (wakeAt !== null && wakeAt <= now) {
      const error = serializeError(
        new WorkflowSignalTimeoutError(
          `No signal "${signal}"${key === null ? '' : ` with key "${key}"`} came for wait "${name}" of instance "${host.instance.id}" before its timeout.`,
        ),
      );
      host.record({
        name,
        kind: 'signal',
        state: 'failed',
        error,
        signal: wait,
        wakeAt,
        createdAt: entry?.createdAt ?? now,
        updatedAt: now,
      });
      throw deserializeError(error);
    }
    if (!entry)
      host.record({ name, kind: 'signal', state: 'waiting', signal: wait, wakeAt, createdAt: now, updatedAt: now });
    return host.suspendOperation({ wakeAt, wait });
  }

  private take(name: string, key: string | null, id: number): void {
    const k = waitKey({ name, key });
    const taken = (this.taken ??= new Map());
    taken.set(k, Math.max(taken.get(k) ?? 0, id));
  }
}

function waitKey(wait: WorkflowWait): string {
  return JSON.stringify([wait.name, wait.key]);
}
