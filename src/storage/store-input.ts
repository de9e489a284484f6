import { markInputError } from '../errors/workflow-input-error.js';
import { checkKey, type StoreKeyLimits } from './key-limits.js';
import type { WorkflowJournalEntry } from './workflow-instance.js';
import type { NewWorkflowInstance, NewWorkflowSignal, WorkflowScheduleSave, WorkflowWrite } from './workflow-store.js';

const INT4 = 2 ** 31;

/**
 * What a store checks before it writes anything: every key against its `StoreKeyLimits` (in a SQL
 * store an over-long key would otherwise fail in an index, be cut short by a lenient server, or
 * fail inside the application's transaction), and integers against the SQL stores' 4-byte columns.
 * Each failure is a `RangeError` naming the store, the field and the limit.
 */
export class StoreInput {
  constructor(
    private readonly store: string,
    private readonly limits: StoreKeyLimits,
    /**
     * The most UTF-8 bytes a journal entry's instance id and name take together (the journal's
     * primary key holds both), when the database bounds it in bytes; `undefined` when
     * `limits.journalName` alone keeps it inside the index.
     */
    private readonly journalKeyBytes?: number,
  ) {}

  newInstance(init: NewWorkflowInstance): void {
    const { store, limits } = this;
    checkKey(store, 'instance id', init.id, limits.instanceId);
    checkKey(store, 'workflow name', init.workflow, limits.workflow);
    checkKey(store, 'parent id', init.parentId, limits.instanceId);
    checkKey(store, 'concurrency key', init.concurrencyKey, limits.concurrencyKey);
    checkKey(store, 'rate-limit key', init.rateLimitKey, limits.rateLimitKey);
    checkKey(store, 'schedule id', init.scheduleId, limits.scheduleId);
    checkKey(store, 'debounce key', init.debounce?.key, limits.debounceKey);
    if (init.lease) this.token(init.lease.token, init.lease.owner);
    this.integer('version', init.version);
    this.integer('priority', init.priority ?? 0);
  }

  /** `pauseWorkflow()`'s or `resumeWorkflow()`'s workflow name and version. */
  pauseTarget(workflow: string, version: number | null): void {
    checkKey(this.store, 'workflow name', workflow, this.limits.workflow);
    if (version !== null) this.integer('version', version);
  }

  signal(signal: NewWorkflowSignal): void {
    this.wait(signal.name, signal.key);
    checkKey(this.store, 'signal id (dedupe id)', signal.dedupeId, this.limits.dedupeId);
  }

  wait(name: string, key: string | null): void {
    checkKey(this.store, 'signal name', name, this.limits.signal);
    checkKey(this.store, 'signal key', key, this.limits.signalKey);
  }

  /** A `write()`: its entries, its signal and the waits it registers. */
  write(id: string, write: WorkflowWrite): void {
    this.entries(id, write.entries);
    if (write.signal) this.signal(write.signal);
    if (write.release) for (const wait of write.release.waits) this.wait(wait.name, wait.key);
  }

  entries(id: string, entries: readonly WorkflowJournalEntry[]): void {
    const max = this.journalKeyBytes;
    for (const entry of entries) {
      checkKey(this.store, 'journal entry name', entry.name, this.limits.journalName);
      // Only names in multi-byte characters near the limit can reach the byte bound.
      if (max === undefined || (id.length + entry.name.length) * 3 <= max) continue;
      const bytes = Buffer.byteLength(id) + Buffer.byteLength(entry.name);
      if (bytes > max) {
        throw markInputError(
          new RangeError(
            `${this.store}: journal entry name ${JSON.stringify(entry.name.slice(0, 40))}... takes, with its instance id, ${bytes} ` +
              `bytes in UTF-8; the store keeps at most ${max}. Use a shorter step, sleep or wait name.`,
          ),
        );
      }
    }
  }

  /** A lease token, and the owner (a worker's id) that goes with it. */
  token(token: string, owner?: string): void {
    checkKey(this.store, 'lease token', token, this.limits.leaseToken);
    checkKey(this.store, 'lease owner (worker id)', owner, this.limits.leaseToken);
  }

  schedule(save: WorkflowScheduleSave): void {
    checkKey(this.store, 'schedule id', save.id, this.limits.scheduleId);
    checkKey(this.store, 'workflow name', save.workflow, this.limits.workflow);
  }

  private integer(field: string, value: number): void {
    if (!Number.isInteger(value) || value < -INT4 || value >= INT4) {
      throw markInputError(
        new RangeError(
          `${this.store}: ${field} must be an integer between ${-INT4} and ${INT4 - 1}, got ${String(value)}.`,
        ),
      );
    }
  }
}
