import { shownValue } from '../errors/shown-value.js';
import type { PayloadCodecChain } from '../codec/payload-codec-chain.js';
import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import { WorkflowPayloadError } from '../errors/workflow-payload.error.js';
import { decodeError, encodeError } from './error-encoding.js';
import type { WorkflowPayloadChange, WorkflowPayloadRewrite } from './payload-rewrite.js';
import type { WorkflowInstance, WorkflowJournalEntry } from './workflow-instance.js';
import type { WorkflowListPosition, WorkflowStore } from './workflow-store.js';

/** Where a re-encryption got to: pass it back as `resumeFrom` to carry on from there. */
export interface WorkflowReencryptCursor {
  /** The last instance done, in `list()` order (`createdAt`, then `id`); `null`: none yet. */
  instance: WorkflowListPosition | null;
  /** The last signal id done; 0: none yet. */
  signal: number;
  /** The last schedule done, in `id` order; `null`: none yet. */
  schedule: string | null;
}

/** Progress, reported after every batch, and the result at the end. */
export interface WorkflowReencryptProgress {
  /** 1 for the first pass over the store; later passes pick up what changed under the first. */
  pass: number;
  phase: 'instances' | 'signals' | 'schedules' | 'done';
  /** Instances, signals and schedules read in this run. */
  read: { instances: number; signals: number; schedules: number };
  /** Payloads rewritten under the current codec in this run. */
  rewritten: number;
  /** Payloads a concurrent write changed between the read and the rewrite (the next pass reads them again). */
  changed: number;
  /** Payloads no configured codec can read (a codec missing from the list, tampered data): left as they are. */
  unreadable: number;
  cursor: WorkflowReencryptCursor;
}

/** The end of a re-encryption. */
export interface WorkflowReencryptResult extends WorkflowReencryptProgress {
  /**
   * Payloads still not under the current codec after the last pass: unreadable ones, and any a
   * concurrent write kept changing. 0 means every stored payload is under the current codec, and
   * the codecs after it can be removed from the list. `null` when the last pass did not read the
   * whole store (stopped by `signal`, or a resumed run held to one pass by `maxPasses`): nothing is
   * known of the rest, so run it again (from `cursor`).
   */
  remaining: number | null;
}

/** What `reencrypt()` takes. */
export interface WorkflowReencryptOptions {
  /** Instances, signals or schedules read per batch. Default 100. */
  batchSize?: number;
  /** Called after each batch. */
  onProgress?(progress: WorkflowReencryptProgress): void;
  /** A cursor from an earlier, interrupted run: its first pass starts there. */
  resumeFrom?: WorkflowReencryptCursor;
  /** Passes at most (each after the first re-reads only if the one before met concurrent writes or resumed). Default 3. */
  maxPasses?: number;
  /** Stops after the current batch when aborted; the result's cursor says where to resume. */
  signal?: AbortSignal;
}

const SCHEDULE_PAGE_LIMIT = 1000;

/**
 * Rewrites every stored payload that is not under the chain's current codec (written by an older
 * codec, or before any codec) with the current one, in batches: instances (and their journals),
 * then signals, then schedules. Each payload is replaced by compare-and-set (`rewritePayloads()`),
 * so it runs safely beside live workers; a payload a worker changed meanwhile is counted as
 * `changed` and read again by the next pass. Payloads already current are read but never written,
 * so running it again (or resuming) costs reads only.
 */
export class PayloadReencryption {
  constructor(
    private readonly store: WorkflowStore,
    private readonly chain: PayloadCodecChain,
    private readonly now: () => number,
  ) {}

  async run(options: WorkflowReencryptOptions = {}): Promise<WorkflowReencryptResult> {
    const store = this.requireStore();
    const batch = options.batchSize ?? 100;
    if (!Number.isInteger(batch) || batch < 1 || batch > 1000)
      throw new TypeError(
        `Invalid reencrypt() option "batchSize": ${shownValue(batch)}. Use a whole number from 1 to 1000.`,
      );
    const maxPasses = options.maxPasses ?? 3;
    if (!Number.isInteger(maxPasses) || maxPasses < 1)
      throw new TypeError(
        `Invalid reencrypt() option "maxPasses": ${shownValue(maxPasses)}. Use a whole number, 1 or more.`,
      );
    const progress: WorkflowReencryptProgress = {
      pass: 1,
      phase: 'instances',
      read: { instances: 0, signals: 0, schedules: 0 },
      rewritten: 0,
      changed: 0,
      unreadable: 0,
      cursor: options.resumeFrom ? { ...options.resumeFrom } : { instance: null, signal: 0, schedule: null },
    };
    let resumed = options.resumeFrom !== undefined;
    for (;;) {
      const before = { changed: progress.changed, unreadable: progress.unreadable };
      // Stopped midway, the counts say nothing of what it did not read: never report that as 0 left.
      if (!(await this.pass(store, batch, progress, options))) return { ...progress, remaining: null };
      const changed = progress.changed - before.changed;
      const unreadable = progress.unreadable - before.unreadable;
      // Another pass when this one met concurrent writes, or started midway (a resume).
      if ((changed === 0 && !resumed) || progress.pass >= maxPasses) {
        progress.phase = 'done';
        options.onProgress?.({ ...progress });
        return { ...progress, remaining: resumed ? null : changed + unreadable };
      }
      resumed = false;
      progress.pass++;
      progress.cursor = { instance: null, signal: 0, schedule: null };
    }
  }

  /** One pass from `progress.cursor` to the end; resolves to `false` when `options.signal` stopped it first. */
  private async pass(
    store: Required<Pick<WorkflowStore, 'rewritePayloads' | 'listSignals' | 'rewriteSignalPayload'>> & WorkflowStore,
    batch: number,
    progress: WorkflowReencryptProgress,
    options: WorkflowReencryptOptions,
  ): Promise<boolean> {
    const report = () =>
      options.onProgress?.({ ...progress, read: { ...progress.read }, cursor: { ...progress.cursor } });
    progress.phase = 'instances';
    for (;;) {
      if (options.signal?.aborted) return false;
      const after = progress.cursor.instance ?? undefined;
      const page = await store.list({ limit: batch, offset: 0, ...(after ? { after } : {}) });
      for (const instance of page) {
        await this.instance(store, instance, progress);
        progress.read.instances++;
        progress.cursor.instance = { createdAt: instance.createdAt, id: instance.id };
      }
      if (page.length > 0) report();
      if (page.length < batch) break;
    }
    progress.phase = 'signals';
    for (;;) {
      if (options.signal?.aborted) return false;
      const page = await store.listSignals({ afterId: progress.cursor.signal, limit: batch });
      for (const record of page) {
        const change = await this.change(record.payload, progress);
        if (change) this.count((await store.rewriteSignalPayload(record.id, change)) ? 1 : 0, 1, progress);
        progress.read.signals++;
        progress.cursor.signal = record.id;
      }
      if (page.length > 0) report();
      if (page.length < batch) break;
    }
    progress.phase = 'schedules';
    for (;;) {
      if (options.signal?.aborted) return false;
      // By key, past the last one done: with an offset, a schedule deleted behind the position
      // meanwhile would move the next one into the page already read, and it would be skipped.
      const after = progress.cursor.schedule;
      const page = await store.listSchedules({
        limit: Math.min(batch, SCHEDULE_PAGE_LIMIT),
        offset: 0,
        ...(after === null ? {} : { after }),
      });
      if (after !== null && page.some((schedule) => schedule.id === after)) throw ignoredAfter(store, after);
      for (const schedule of page) {
        const change = await this.change(schedule.input, progress);
        if (change) {
          const saved = await store.saveSchedule({
            id: schedule.id,
            workflow: schedule.workflow,
            declared: schedule.declared,
            spec: schedule.spec,
            input: change.to,
            paused: schedule.paused,
            wakeAt: schedule.wakeAt,
            state: schedule.state,
            expectRevision: schedule.revision,
            releaseLease: false,
            now: this.now(),
          });
          this.count(saved ? 1 : 0, 1, progress);
        }
        progress.read.schedules++;
        progress.cursor.schedule = schedule.id;
      }
      if (page.length > 0) report();
      if (page.length < batch) break;
    }
    return true;
  }

  /** Rewrites what is not current of one instance: its fields and its journal's values and errors. */
  private async instance(
    store: Required<Pick<WorkflowStore, 'rewritePayloads'>> & WorkflowStore,
    listed: WorkflowInstance,
    progress: WorkflowReencryptProgress,
  ): Promise<void> {
    const stored = await store.get(listed.id, { journal: true });
    if (!stored) return; // deleted since the page was read
    const rewrite: WorkflowPayloadRewrite = {};
    let wanted = 0;
    for (const field of ['input', 'output', 'customStatus'] as const) {
      const change = await this.change(stored[field], progress);
      if (change) {
        rewrite[field] = change;
        wanted++;
      }
    }
    if (stored.cancelReason !== null) {
      const change = await this.change(stored.cancelReason, progress);
      if (change) {
        rewrite.cancelReason = change as WorkflowPayloadChange<string | null>;
        wanted++;
      }
    }
    const error = await this.errorChange(stored.error, progress);
    if (error) {
      rewrite.error = error;
      wanted++;
    }
    for (const entry of stored.journal ?? []) {
      const to = await this.entry(entry, progress);
      if (to) {
        (rewrite.entries ??= []).push({ name: entry.name, from: entry, to });
        wanted++;
      }
    }
    if (wanted > 0) this.count(await store.rewritePayloads(stored.id, rewrite), wanted, progress);
  }

  private async entry(
    entry: WorkflowJournalEntry,
    progress: WorkflowReencryptProgress,
  ): Promise<WorkflowJournalEntry | null> {
    const value = entry.value === undefined ? null : await this.change(entry.value, progress);
    const error = entry.error ? await this.errorChange(entry.error, progress) : null;
    if (!value && !error) return null;
    const to = { ...entry };
    if (value) to.value = value.to;
    if (error) to.error = error.to;
    return to;
  }

  /** The change that puts one stored payload under the current codec; `null` when it is current or unreadable. */
  private async change(stored: unknown, progress: WorkflowReencryptProgress): Promise<WorkflowPayloadChange | null> {
    if (this.chain.isCurrent(stored)) return null;
    try {
      // Values stored before any codec are encoded too, whatever requireEncodedPayloads says.
      return { from: stored, to: await this.chain.encode(await this.chain.decode(stored, true)) };
    } catch (error) {
      if (!(error instanceof WorkflowPayloadError)) throw error;
      progress.unreadable++;
      return null;
    }
  }

  /** An error is current when every encoded field of it is; else it is re-encoded whole. */
  private async errorChange(
    stored: SerializedWorkflowError | null,
    progress: WorkflowReencryptProgress,
  ): Promise<WorkflowPayloadChange<SerializedWorkflowError | null> | null> {
    if (!stored) return null;
    let current = true;
    let unreadable = false;
    const decoded = await decodeError(
      async (value) => {
        if (!this.chain.isCurrent(value)) current = false;
        try {
          return await this.chain.decode(value, true);
        } catch (error) {
          if (!(error instanceof WorkflowPayloadError)) throw error;
          unreadable = true;
          return value;
        }
      },
      stored,
      'error',
    );
    if (current) return null;
    if (unreadable) {
      progress.unreadable++;
      return null;
    }
    return { from: stored, to: (await encodeError(this.chain, decoded)) ?? null };
  }

  private count(replaced: number, wanted: number, progress: WorkflowReencryptProgress): void {
    progress.rewritten += replaced;
    progress.changed += wanted - replaced;
  }

  private requireStore() {
    const { store } = this;
    if (!store.rewritePayloads || !store.listSignals || !store.rewriteSignalPayload) {
      throw new TypeError(
        `Re-encryption needs rewritePayloads(), listSignals() and rewriteSignalPayload(), which ${store.constructor.name} does not have. ` +
          'Every store shipped with @nestjs/workflows has them; add them to your own store (see the WorkflowStore contract).',
      );
    }
    return store as Required<Pick<WorkflowStore, 'rewritePayloads' | 'listSignals' | 'rewriteSignalPayload'>> &
      WorkflowStore;
  }
}

/** A store whose `listSchedules()` returned `after` itself when asked for what comes after it: it ignores the option, and paging would never end. */
function ignoredAfter(store: WorkflowStore, after: string): TypeError {
  return new TypeError(
    `${store.constructor.name}.listSchedules() ignored the query's "after": asked for the schedules after ${JSON.stringify(after)}, ` +
      'it returned that schedule again. Return only schedules whose id sorts after "after" (see the WorkflowStore contract), so re-encryption can page through them.',
  );
}
